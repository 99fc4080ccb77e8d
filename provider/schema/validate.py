"""Validates recorded provider-protocol traffic against this directory's JSON Schemas.

    python3 validate.py REQUESTS.jsonl RESPONSES.jsonl

Each line of REQUESTS must be a request (request.json), each line of RESPONSES an answer
(response.json) to a request of REQUESTS. Needs the `jsonschema` package (4.18 or newer).
Exits 0 when every line is valid, 1 (naming each invalid line) otherwise.
"""

import json
import pathlib
import sys

import jsonschema
import referencing

HERE = pathlib.Path(__file__).parent


def registry():
    resources = []
    for path in HERE.glob("*.json"):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], referencing.Resource.from_contents(schema)))
    return referencing.Registry().with_resources(resources)


def validator(name, schemas):
    schema = json.loads((HERE / name).read_text())
    return jsonschema.Draft202012Validator(schema, registry=schemas)


def main(requests_path, responses_path):
    schemas = registry()
    problems = []
    asked = set()
    for kind, path, check in (
        ("request", requests_path, validator("request.json", schemas)),
        ("answer", responses_path, validator("response.json", schemas)),
    ):
        lines = [l for l in pathlib.Path(path).read_text().splitlines() if l.strip()]
        if not lines:
            problems.append(f"{path}: no {kind} recorded")
        for number, line in enumerate(lines, 1):
            message = json.loads(line)
            for error in check.iter_errors(message):
                problems.append(f"{path}:{number}: {kind}: {error.message} at {list(error.path)}")
            if kind == "request":
                asked.add(message.get("id"))
            elif message.get("id") not in asked:
                problems.append(f"{path}:{number}: answers request {message.get('id')}, never sent")
    for problem in problems[:50]:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
