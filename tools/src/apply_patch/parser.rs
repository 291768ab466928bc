//! Parses the patch envelope: `*** Begin Patch`, then Add / Delete / Update file
//! operations (an Update may carry `*** Move to:` and `@@` hunks of context, `-` and `+`
//! lines, optionally ending with `*** End of File`), then `*** End Patch`.
//!
//! The parser is strict about structure (so a malformed patch fails with the line that is
//! wrong) and lenient about what models commonly get slightly off: surrounding blank
//! lines, a missing `@@` before the first hunk, and blank lines inside a hunk meant as
//! empty context.

use std::path::PathBuf;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    pub ops: Vec<FileOp>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    Add {
        path: PathBuf,
        contents: String,
    },
    Delete {
        path: PathBuf,
    },
    Update {
        path: PathBuf,
        move_to: Option<PathBuf>,
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    pub fn path(&self) -> &PathBuf {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path } | FileOp::Update { path, .. } => {
                path
            }
        }
    }
}

/// One `@@` section of an Update.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hunk {
    /// The text after `@@`: a line to find before matching the hunk (e.g. `fn main() {`).
    pub anchor: Option<String>,
    /// Context and removed lines, in order: what must be found in the file.
    pub old: Vec<String>,
    /// Context and added lines, in order: what replaces it.
    pub new: Vec<String>,
    /// The hunk must match at the end of the file.
    pub end_of_file: bool,
    /// 1-based line in the patch where the hunk starts, for error messages.
    pub patch_line: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid patch at line {line}: {message}")]
pub struct ParseError {
    /// 1-based line of the patch text.
    pub line: usize,
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    // Index of the first and last non-blank lines; the envelope must be exactly there.
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Err(err(1, "the patch is empty"));
    };
    if lines[first].trim() != BEGIN {
        return Err(err(first + 1, format!("expected `{BEGIN}`")));
    }
    if last == first || lines[last].trim() != END {
        return Err(err(last + 1, format!("expected `{END}` as the last line")));
    }
    let mut parser = Parser {
        lines: &lines[..last],
        pos: first + 1,
    };
    let mut ops = Vec::new();
    while parser.pos < parser.lines.len() {
        ops.push(parser.file_op()?);
    }
    if ops.is_empty() {
        return Err(err(last + 1, "the patch has no file operations"));
    }
    Ok(Patch { ops })
}

struct Parser<'a> {
    lines: &'a [&'a str],
    pos: usize,
}

impl Parser<'_> {
    fn line_no(&self) -> usize {
        self.pos + 1
    }

    fn peek(&self) -> Option<&str> {
        self.lines.get(self.pos).copied()
    }

    fn at_file_header(&self) -> bool {
        self.peek()
            .is_some_and(|l| l.starts_with(ADD) || l.starts_with(DELETE) || l.starts_with(UPDATE))
    }

    fn path_after(&self, line: &str, prefix: &str) -> Result<PathBuf, ParseError> {
        let path = line[prefix.len()..].trim();
        if path.is_empty() {
            return Err(err(self.line_no(), "missing path"));
        }
        Ok(PathBuf::from(path))
    }

    fn file_op(&mut self) -> Result<FileOp, ParseError> {
        let Some(line) = self.peek() else {
            return Err(err(self.line_no(), "expected a file operation"));
        };
        if line.trim().is_empty() {
            self.pos += 1;
            return self.file_op();
        }
        if line.starts_with(ADD) {
            let path = self.path_after(line, ADD)?;
            self.pos += 1;
            let mut contents = String::new();
            while let Some(l) = self.peek() {
                if self.at_file_header() {
                    break;
                }
                let Some(added) = l.strip_prefix('+') else {
                    return Err(err(
                        self.line_no(),
                        "every line of an added file must start with `+`",
                    ));
                };
                contents.push_str(added);
                contents.push('\n');
                self.pos += 1;
            }
            return Ok(FileOp::Add { path, contents });
        }
        if line.starts_with(DELETE) {
            let path = self.path_after(line, DELETE)?;
            self.pos += 1;
            return Ok(FileOp::Delete { path });
        }
        if line.starts_with(UPDATE) {
            let path = self.path_after(line, UPDATE)?;
            self.pos += 1;
            let mut move_to = None;
            if let Some(l) = self.peek().filter(|l| l.starts_with(MOVE_TO)) {
                move_to = Some(self.path_after(l, MOVE_TO)?);
                self.pos += 1;
            }
            let mut hunks = Vec::new();
            while self.peek().is_some() && !self.at_file_header() {
                hunks.push(self.hunk(hunks.is_empty())?);
            }
            if hunks.is_empty() && move_to.is_none() {
                return Err(err(
                    self.line_no(),
                    format!("`{}` has no hunks", path.display()),
                ));
            }
            return Ok(FileOp::Update {
                path,
                move_to,
                hunks,
            });
        }
        Err(err(
            self.line_no(),
            format!("expected `{ADD}`, `{DELETE}` or `{UPDATE}`, found `{line}`"),
        ))
    }

    fn hunk(&mut self, first: bool) -> Result<Hunk, ParseError> {
        let mut hunk = Hunk {
            patch_line: self.line_no(),
            ..Hunk::default()
        };
        match self.peek() {
            Some(l) if l.trim_end() == "@@" => self.pos += 1,
            Some(l) if l.starts_with("@@ ") => {
                let anchor = l[3..].trim();
                hunk.anchor = (!anchor.is_empty()).then(|| anchor.to_owned());
                self.pos += 1;
            }
            // The first hunk may omit its `@@`.
            Some(_) if first => {}
            _ => return Err(err(self.line_no(), "expected `@@` to start a hunk")),
        }
        let mut body_lines = 0;
        while let Some(l) = self.peek() {
            if l.starts_with("@@") || self.at_file_header() {
                break;
            }
            if l.trim_end() == END_OF_FILE {
                hunk.end_of_file = true;
                self.pos += 1;
                break;
            }
            match l.chars().next() {
                Some(' ') => {
                    hunk.old.push(l[1..].to_owned());
                    hunk.new.push(l[1..].to_owned());
                }
                Some('-') => hunk.old.push(l[1..].to_owned()),
                Some('+') => hunk.new.push(l[1..].to_owned()),
                // A blank line is empty context: editors and models strip the space.
                None => {
                    hunk.old.push(String::new());
                    hunk.new.push(String::new());
                }
                Some(_) => {
                    return Err(err(
                        self.line_no(),
                        format!("a hunk line must start with ` `, `-` or `+`, found `{l}`"),
                    ))
                }
            }
            body_lines += 1;
            self.pos += 1;
        }
        if body_lines == 0 {
            return Err(err(hunk.patch_line, "empty hunk"));
        }
        Ok(hunk)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_operation() {
        let patch = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+hello\n+world\n*** Delete File: b.txt\n\
             *** Update File: c.txt\n*** Move to: d.txt\n@@ fn main() {\n context\n-old\n+new\n\
             *** End of File\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(patch.ops.len(), 3);
        assert_eq!(
            patch.ops[0],
            FileOp::Add {
                path: "a.txt".into(),
                contents: "hello\nworld\n".into()
            }
        );
        assert_eq!(
            patch.ops[1],
            FileOp::Delete {
                path: "b.txt".into()
            }
        );
        let FileOp::Update {
            path,
            move_to,
            hunks,
        } = &patch.ops[2]
        else {
            panic!("not an update");
        };
        assert_eq!(path, &PathBuf::from("c.txt"));
        assert_eq!(move_to.as_deref(), Some(std::path::Path::new("d.txt")));
        assert_eq!(hunks[0].anchor.as_deref(), Some("fn main() {"));
        assert_eq!(hunks[0].old, ["context", "old"]);
        assert_eq!(hunks[0].new, ["context", "new"]);
        assert!(hunks[0].end_of_file);
        assert_eq!(hunks[0].patch_line, 8);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("*** Begin Patch\n*** Frobnicate: x\n*** End Patch").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("*** Begin Patch\n*** Update File: x\n@@\n!bad\n*** End Patch").unwrap_err();
        assert_eq!(e.line, 4);
        let e = parse("*** Begin Patch\n*** Add File: x\n+a\n").unwrap_err();
        assert!(e.message.contains("End Patch"));
        let e = parse("").unwrap_err();
        assert!(e.message.contains("empty"));
    }

    #[test]
    fn first_hunk_may_omit_its_header() {
        let patch = parse("*** Begin Patch\n*** Update File: x\n-a\n+b\n*** End Patch").unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else {
            panic!("not an update");
        };
        assert_eq!(hunks[0].old, ["a"]);
    }
}
