//! `mdbook-fkc explain CODE`: the rule, then a contract that fails with the code — the example
//! the book's diagnostics index proves it with (embedded at compile time) — what mdbook-fkc says
//! about it, and how to fix it (the diagnostic's `help:` lines).

use crate::error::CliError;
use mdbook_fkc::diag::Code;
use mdbook_fkc::diag::text::{self, ColorChoice};
use mdbook_fkc::{Checker, Providers, VerifyOptions};
use std::process::ExitCode;

/// The book's diagnostics index: one `should_fail=CODE` example per code.
const INDEX: &str = include_str!("../../../book/diagnostics/index.md");
const INDEX_PATH: &str = "book/diagnostics/index.md";

/// An example of a code, cut from the index.
#[derive(Debug, PartialEq, Eq)]
pub struct Example<'a> {
    /// The prose between the section's heading and its fence.
    pub prose: String,
    /// The fence's 1-based line numbers (the opening line, the closing line).
    pub fence: (usize, usize),
    lines: Vec<&'a str>,
}

/// Finds the first `should_fail=CODE` fence of `code` in the index.
/// What the index says of a code it proves outside the book (by the test suite, or a flag of
/// `check`): (line, the words), as the code's clause in its list — with the list's lead — or
/// the sentence that names it.
pub fn mention(index: &str, code: &str) -> Option<(usize, String)> {
    let lines: Vec<&str> = index.lines().collect();
    let at = lines.iter().position(|line| line.contains(code))?;
    let blank = |line: &&str| line.trim().is_empty();
    let start = lines
        .get(..at)?
        .iter()
        .rposition(blank)
        .map_or(0, |i| i + 1);
    let end = lines
        .get(at..)?
        .iter()
        .position(blank)
        .map_or(lines.len(), |i| at + i);
    let paragraph = lines.get(start..end)?.join(" ");
    let from = paragraph.find(code)?;
    let (before, rest) = paragraph.split_at(from);
    let said = match (rest.find(" ("), rest.find(')'), before.find(": ")) {
        (Some(open), Some(close), Some(lead)) if open == code.len() && close > open => {
            format!("{}: … {}.", &before[..lead], &rest[..=close])
        }
        _ => {
            let sentence_start = before.rfind(". ").map_or(0, |i| i + 2);
            let sentence_end = rest.find(". ").map_or(rest.len(), |i| i + 1);
            format!("{}{}", &before[sentence_start..], &rest[..sentence_end])
        }
    };
    Some((at + 1, said))
}

pub fn example<'a>(index: &'a str, code: &str) -> Option<Example<'a>> {
    let lines: Vec<&str> = index.lines().collect();
    let open = lines.iter().position(|line| {
        line.starts_with("```fkc")
            && line.split(',').any(|attr| {
                attr.strip_prefix("should_fail=")
                    .is_some_and(|codes| codes.split('+').any(|c| c.trim() == code))
            })
    })?;
    let close = open
        + 1
        + lines[open + 1..]
            .iter()
            .position(|l| l.starts_with("```"))?;
    let heading = lines[..open].iter().rposition(|l| l.starts_with("## "))?;
    let prose = lines[heading + 1..open]
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Some(Example {
        prose,
        fence: (open + 1, close + 1),
        lines,
    })
}

impl Example<'_> {
    /// The chapter with only the front matter and this example left (as an ordinary fence);
    /// every other line blank, so line numbers are the index's own.
    fn chapter(&self) -> String {
        let front_end = self
            .lines
            .iter()
            .skip(1)
            .position(|l| *l == "---")
            .map_or(0, |p| p + 2);
        let (open, close) = (self.fence.0 - 1, self.fence.1 - 1);
        let mut out = String::new();
        for (index, line) in self.lines.iter().enumerate() {
            if index < front_end || (index > open && index <= close) {
                out.push_str(line);
            } else if index == open {
                out.push_str("```fkc");
            }
            out.push('\n');
        }
        out
    }

    /// The fence's body, numbered as in the index; a long one is cut to the lines around the
    /// line marked `# ← CODE` (or its head).
    fn excerpt(&self, code: &str) -> String {
        let (open, close) = (self.fence.0 - 1, self.fence.1 - 1);
        let body = open + 1..close;
        let marked = body
            .clone()
            .find(|&i| self.lines[i].contains(&format!("← {code}")));
        let shown = match marked {
            _ if body.len() <= 14 => body,
            Some(at) => at.saturating_sub(4).max(open + 1)..(at + 5).min(close),
            None => open + 1..open + 11,
        };
        let mut out = String::new();
        for index in shown {
            out.push_str(&format!("{:>5} | {}\n", index + 1, self.lines[index]));
        }
        out
    }
}

/// Runs `explain CODE`.
pub fn run(code: &str, color: ColorChoice) -> Result<ExitCode, CliError> {
    let Some(code) = Code::parse(code) else {
        let known = Code::ALL.iter().map(|c| c.as_str().to_owned()).collect();
        let code = code.to_owned();
        return Err(CliError::UnknownCode { code, known });
    };
    outln!(
        "{}: {}\n\n{}",
        code.as_str(),
        code.title(),
        code.explanation()
    );
    let Some(example) = example(INDEX, code.as_str()) else {
        match mention(INDEX, code.as_str()) {
            Some((line, said)) => outln!(
                "\nThe diagnostics index ({INDEX_PATH}:{line}) has no inline example of it, and says where it is proven: {said}"
            ),
            None => {
                outln!("\nThe book's diagnostics index ({INDEX_PATH}) has no example of this code.")
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    outln!(
        "\nExample ({INDEX_PATH}:{}): {}\n\n{}",
        example.fence.0,
        example.prose,
        example.excerpt(code.as_str())
    );
    let diagnostics = diagnose(&example);
    let found: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.code == code && d.is_error())
        .collect();
    if found.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    use std::io::IsTerminal;
    let style = color.resolve(std::io::stdout().is_terminal(), |name| {
        std::env::var_os(name)
    });
    outln!("What mdbook-fkc says:\n");
    for diagnostic in &found {
        outln!("{}\n", text::render(diagnostic, style));
    }
    let fixes: Vec<&String> = found.iter().flat_map(|d| &d.help).collect();
    if !fixes.is_empty() {
        outln!("How to fix it:");
        for fix in fixes {
            outln!("  - {fix}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The diagnostics the example draws, from the real checker (the gate included).
fn diagnose(example: &Example<'_>) -> Vec<mdbook_fkc::diag::Diagnostic> {
    let mut checker = Checker::without_rendering(VerifyOptions::default(), Providers::default());
    checker
        .chapter(INDEX_PATH, &example.chapter())
        .map(|report| report.diagnostics)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_example_in_the_index_is_found_with_its_prose() {
        let found = example(INDEX, "FKC0104").unwrap();
        assert!(found.prose.contains("blurbb"), "{}", found.prose);
        let excerpt = found.excerpt("FKC0104");
        assert!(excerpt.contains("← FKC0104"), "{excerpt}");
        assert!(example(INDEX, "FKC9999").is_none());
    }

    #[test]
    fn the_cut_chapter_keeps_line_numbers() {
        let found = example(INDEX, "FKC0104").unwrap();
        let chapter = found.chapter();
        let marked = INDEX.lines().position(|l| l.contains("← FKC0104")).unwrap();
        assert_eq!(chapter.lines().nth(marked), INDEX.lines().nth(marked));
        assert!(!chapter.contains("should_fail"));
        assert!(chapter.starts_with("---\nfkc_version: 1"));
    }

    #[test]
    fn every_code_has_an_example_or_says_where_it_is_proven() {
        let (line, said) = mention(INDEX, "FKC0413").unwrap();
        assert!(INDEX.lines().nth(line - 1).unwrap().contains("FKC0413"));
        assert!(
            said.contains("proven by the test suite on fixture books"),
            "{said}"
        );
        assert!(
            said.ends_with("FKC0413 (a kernel panicked, aborted, overflowed its stack or exited)."),
            "{said}"
        );
        let (_, said) = mention(INDEX, "FKC0005").unwrap();
        assert!(
            said.starts_with("FKC0005 is raised by `mdbook-fkc check --deny unverified`"),
            "{said}"
        );
        for code in mdbook_fkc::diag::Code::ALL {
            let code = code.as_str();
            assert!(
                example(INDEX, code).is_some() || mention(INDEX, code).is_some(),
                "{code}: neither an example nor a word in the diagnostics index"
            );
        }
    }
}
