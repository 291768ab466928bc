//! Where the prompt comes from. The argument, or stdin when the argument is `-` or absent;
//! when both are there (a prompt and piped stdin), stdin is appended as a `<stdin>` block,
//! so `git diff | rein exec "review this"` works. Images become `data:` URLs.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use rein_protocol::InputPart;

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("no prompt: pass one as an argument or pipe it on stdin")]
    Missing,
    #[error("reading the prompt from stdin: {0}")]
    Stdin(#[source] std::io::Error),
    #[error("reading the image {path}: {source}")]
    Image {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the image {path} is not a png, jpeg, gif or webp file (judged by its extension)")]
    ImageType { path: PathBuf },
}

/// What piped stdin may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdinUse {
    /// The prompt when there is no argument, else extra input appended to it.
    PromptOrExtra,
    /// Only the prompt when there is no argument; otherwise stdin is left alone.
    PromptOnly,
}

/// The input parts of the prompt: its text, then the images.
pub fn resolve(
    arg: Option<&str>,
    images: &[PathBuf],
    stdin_use: StdinUse,
) -> Result<Vec<InputPart>, PromptError> {
    let stdin = std::io::stdin();
    let piped = !stdin.is_terminal();
    let text = match arg {
        Some(p) if p != "-" => {
            if piped && stdin_use == StdinUse::PromptOrExtra {
                let extra = read_all(stdin)?;
                with_stdin_block(p, &extra)
            } else {
                p.to_owned()
            }
        }
        _ if piped => read_all(stdin)?,
        _ => return Err(PromptError::Missing),
    };
    if text.trim().is_empty() && images.is_empty() {
        return Err(PromptError::Missing);
    }
    let mut parts = Vec::with_capacity(1 + images.len());
    if !text.trim().is_empty() {
        parts.push(InputPart::text(text));
    }
    for path in images {
        parts.push(image_part(path)?);
    }
    Ok(parts)
}

fn read_all(mut stdin: std::io::Stdin) -> Result<String, PromptError> {
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(PromptError::Stdin)?;
    Ok(text)
}

/// The prompt followed by piped input, if there was any.
pub fn with_stdin_block(prompt: &str, stdin: &str) -> String {
    if stdin.trim().is_empty() {
        return prompt.to_owned();
    }
    let body = stdin.strip_suffix('\n').unwrap_or(stdin);
    format!("{prompt}\n\n<stdin>\n{body}\n</stdin>")
}

fn image_part(path: &Path) -> Result<InputPart, PromptError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let mime = match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        _ => {
            return Err(PromptError::ImageType {
                path: path.to_owned(),
            })
        }
    };
    let bytes = std::fs::read(path).map_err(|source| PromptError::Image {
        path: path.to_owned(),
        source,
    })?;
    Ok(InputPart::Image {
        url: format!("data:{mime};base64,{}", base64(&bytes)),
    })
}

/// Standard base64 with padding; a dozen lines do not justify a dependency.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn piped_input_is_appended_as_a_block_only_when_present() {
        assert_eq!(with_stdin_block("review", " \n"), "review");
        assert_eq!(
            with_stdin_block("review", "diff\n"),
            "review\n\n<stdin>\ndiff\n</stdin>"
        );
    }
}
