//! YAML `#` comments carry meaning for readers (`rank: 4 # [N, Cin, H, W]`). serde does not keep
//! them, so this scanner finds them by line: a trailing comment belongs to the value on its line;
//! a comment on a line of its own continues the comment above it when that line had one, and
//! otherwise introduces the next value.

use std::collections::BTreeMap;

/// The comments of one YAML block, indexed by 0-based line number within the block.
#[derive(Debug, Clone, Default)]
pub struct Comments {
    by_line: BTreeMap<usize, String>,
}

impl Comments {
    /// Scans a YAML block.
    pub fn scan(yaml: &str) -> Self {
        let mut by_line: BTreeMap<usize, String> = BTreeMap::new();
        let mut pending: Vec<String> = Vec::new();
        let mut previous_owner: Option<usize> = None;
        for (line_number, line) in yaml.lines().enumerate() {
            let trimmed = line.trim_start();
            if let Some(comment) = trimmed.strip_prefix('#') {
                let text = comment.trim().to_owned();
                match previous_owner {
                    Some(owner) => append(&mut by_line, owner, text),
                    None => pending.push(text),
                }
                continue;
            }
            if trimmed.is_empty() {
                previous_owner = None;
                continue;
            }
            let trailing = trailing_comment(line).map(str::trim).map(str::to_owned);
            let mut parts: Vec<String> = std::mem::take(&mut pending);
            parts.extend(trailing);
            previous_owner = None;
            if !parts.is_empty() {
                let has_trailing = trailing_comment(line).is_some();
                by_line.insert(line_number, parts.join(" "));
                if has_trailing {
                    previous_owner = Some(line_number);
                }
            }
        }
        Comments { by_line }
    }

    /// The comment that annotates the value on a 0-based line of the block, if any.
    pub fn on_line(&self, line: usize) -> Option<&str> {
        self.by_line.get(&line).map(String::as_str)
    }
}

fn append(by_line: &mut BTreeMap<usize, String>, owner: usize, text: String) {
    if let Some(existing) = by_line.get_mut(&owner) {
        existing.push(' ');
        existing.push_str(&text);
    }
}

/// The text after a `#` that starts a comment: outside quotes, at the line start or after a
/// space or tab.
fn trailing_comment(line: &str) -> Option<&str> {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (index, ch) in line.char_indices() {
        match quote {
            Some(open) if ch == open => quote = None,
            Some(_) => {}
            None if ch == '"' || ch == '\'' => quote = Some(ch),
            None if ch == '#' && (previous == ' ' || previous == '\t') => {
                return line.get(index + 1..);
            }
            None => {}
        }
        previous = ch;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_leading_and_continued_comments() {
        let yaml = "\
op_kind: MaxPool2D # forward marker only
# exists, op.rs:93
registrable: false
class: conv
# MACs = N * Cout
flops: \"2 * n # not a comment\" # two per MAC
rank: 4 # [N, C, H, W]
";
        let comments = Comments::scan(yaml);
        assert_eq!(
            comments.on_line(0),
            Some("forward marker only exists, op.rs:93")
        );
        assert_eq!(comments.on_line(2), None);
        assert_eq!(comments.on_line(3), None);
        assert_eq!(comments.on_line(5), Some("MACs = N * Cout two per MAC"));
        assert_eq!(comments.on_line(6), Some("[N, C, H, W]"));
    }
}
