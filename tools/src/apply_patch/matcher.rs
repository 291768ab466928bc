//! Finds where a hunk's old lines sit in a file. Models reproduce context imperfectly, so
//! matching relaxes step by step: exact, then ignoring trailing whitespace, then ignoring
//! surrounding whitespace, then also treating typographic punctuation (curly quotes,
//! dashes, non-breaking spaces) as its ASCII form. The first level that matches wins, so
//! an exact match is never displaced by a fuzzy one.

/// The first index `>= start` where `pattern` occurs in `lines`. With `at_end`, a match
/// flush with the end of the file is preferred.
pub fn find(lines: &[String], pattern: &[String], start: usize, at_end: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(if at_end {
            lines.len()
        } else {
            start.min(lines.len())
        });
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let levels: [fn(&str) -> String; 4] = [
        |s| s.to_owned(),
        |s| s.trim_end().to_owned(),
        |s| s.trim().to_owned(),
        |s| normalise_punctuation(s.trim()),
    ];
    let last_start = lines.len() - pattern.len();
    for normalise in levels {
        let wanted: Vec<String> = pattern.iter().map(|p| normalise(p)).collect();
        let matches_at = |i: usize| {
            lines[i..i + pattern.len()]
                .iter()
                .zip(&wanted)
                .all(|(l, w)| normalise(l) == *w)
        };
        if at_end && last_start >= start && matches_at(last_start) {
            return Some(last_start);
        }
        if let Some(i) = (start..=last_start).find(|&i| matches_at(i)) {
            return Some(i);
        }
    }
    None
}

fn normalise_punctuation(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn v(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn exact_match_wins_over_fuzzy() {
        let file = v(&["  a", "a"]);
        assert_eq!(find(&file, &v(&["a"]), 0, false), Some(1));
    }

    #[test]
    fn tolerates_whitespace_and_punctuation() {
        let file = v(&["fn x() {   ", "    let s = \u{201C}hi\u{201D};", "}"]);
        assert_eq!(find(&file, &v(&["fn x() {"]), 0, false), Some(0));
        assert_eq!(find(&file, &v(&["let s = \"hi\";"]), 0, false), Some(1));
        assert_eq!(find(&file, &v(&["nope"]), 0, false), None);
    }

    #[test]
    fn end_of_file_prefers_the_last_occurrence() {
        let file = v(&["x", "y", "x"]);
        assert_eq!(find(&file, &v(&["x"]), 0, true), Some(2));
        assert_eq!(find(&file, &v(&["x"]), 0, false), Some(0));
    }
}
