//! Reading a command's options the way `getopt_long` does, conservatively: every argument
//! form in which the program would see a given option is caught, so that the option cannot
//! hide from the judge. An attached value (`-o/out`, `-ro/out`: a short option anywhere in a
//! cluster), a `--name=value`, and an abbreviated long option (`--out` for `--output`, which
//! GNU programs accept as long as it is unambiguous) all count as the option. The reading
//! may over-match (`-to` where `-t` takes `o` as its value): that only makes the judge ask.

/// Options that make an otherwise read-only program write, or run another program.
pub struct Dangerous {
    /// Short options (`o` for `-o`).
    pub short: &'static [char],
    /// Long options without their dashes (`output` for `--output`).
    pub long: &'static [&'static str],
}

/// Whether any argument of `args` is (or may be read by the program as) a dangerous option.
/// Options after operands count (GNU programs permute them); a `--` ends the options.
pub fn uses_dangerous(args: &[String], dangerous: &Dangerous) -> bool {
    for arg in args {
        if arg == "--" {
            return false;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            // An abbreviation names every option it is a prefix of.
            if !name.is_empty() && dangerous.long.iter().any(|d| d.starts_with(name)) {
                return true;
            }
        } else if let Some(cluster) = arg.strip_prefix('-') {
            if cluster.chars().any(|c| dangerous.short.contains(&c)) {
                return true;
            }
        }
    }
    false
}

/// Whether `args` are only options from `allowed` (exact words) and, when `operands` is
/// false, no operands. For commands whose every form but a few listing ones acts.
pub fn only_options(args: &[String], allowed: &[&str], operands: bool) -> bool {
    args.iter().all(|a| {
        if a.starts_with('-') {
            allowed.contains(&a.as_str())
        } else {
            operands
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SORT: Dangerous = Dangerous {
        short: &['o', 'T'],
        long: &["output", "compress-program", "temporary-directory"],
    };

    fn uses(args: &[&str]) -> bool {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        uses_dangerous(&args, &SORT)
    }

    #[test]
    fn every_form_getopt_reads_as_the_option_is_caught() {
        assert!(uses(&["-o", "out", "in"]));
        assert!(uses(&["-o/outside/x", "in"]));
        assert!(uses(&["-ro/outside/x", "in"]));
        assert!(uses(&["--output=/outside/x", "in"]));
        assert!(uses(&["--out=/outside/x", "in"]));
        assert!(uses(&["--o", "/outside/x", "in"]));
        assert!(uses(&["--compress-program=sh", "in"]));
        assert!(uses(&["--compress-prog=sh", "in"]));
        assert!(uses(&["in", "-o", "out"]));
        assert!(uses(&["-T/tmp", "in"]));
    }

    #[test]
    fn other_options_and_operands_after_a_double_dash_are_not() {
        assert!(!uses(&["-r", "-n", "in"]));
        assert!(!uses(&["--reverse", "in"]));
        assert!(!uses(&["--", "-o", "in"]));
        assert!(!uses(&["-", "in"]));
        assert!(!uses(&["--=x"]));
    }
}
