//! Reading test counts out of test runners' output, and the step table.

use std::time::Duration;

/// Tests counted in one runner's output.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Tests that passed.
    pub(crate) passed: u64,
    /// Tests that failed.
    pub(crate) failed: u64,
    /// Tests that were ignored or skipped (never filtered ones).
    pub(crate) ignored: u64,
}

impl Counts {
    /// Adds two counts.
    pub(crate) fn add(self, other: Counts) -> Counts {
        Counts {
            passed: self.passed + other.passed,
            failed: self.failed + other.failed,
            ignored: self.ignored + other.ignored,
        }
    }
}

/// The number just before `word` in `text` (`"12 passed"` -> 12).
fn number_before(text: &str, word: &str) -> Option<u64> {
    let at = text.find(word)?;
    text[..at]
        .trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|digits| digits.parse().ok())
}

/// Sums libtest's `test result: ok. 3 passed; 0 failed; 1 ignored; ...`
/// lines (one per test binary, doc tests included).
pub(crate) fn parse_cargo_test(output: &str) -> Counts {
    output
        .lines()
        .filter_map(|line| line.trim().strip_prefix("test result:"))
        .map(|rest| Counts {
            passed: number_before(rest, " passed").unwrap_or(0),
            failed: number_before(rest, " failed").unwrap_or(0),
            ignored: number_before(rest, " ignored").unwrap_or(0),
        })
        .fold(Counts::default(), Counts::add)
}

/// Reads nextest's closing `Summary [ 1.2s] 45 tests run: 44 passed, 1
/// failed, 0 skipped` line.
pub(crate) fn parse_nextest(output: &str) -> Option<Counts> {
    let line = output
        .lines()
        .rev()
        .find(|line| line.trim_start().starts_with("Summary [") && line.contains("tests run"))?;
    let (_, tail) = line.split_once("tests run:")?;
    Some(Counts {
        passed: number_before(tail, " passed").unwrap_or(0),
        // A test that ran out of time failed too (nextest counts it apart:
        // `684 passed, 1 timed out`).
        failed: number_before(tail, " failed").unwrap_or(0)
            + number_before(tail, " timed out").unwrap_or(0),
        ignored: number_before(tail, " skipped").unwrap_or(0),
    })
}

/// How a step that did not fail ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It ran and passed; the note says what it counted.
    Passed(String),
    /// It could not run here (a tool is missing); the reason says which.
    Skipped(String),
}

/// One finished step of a task, for the closing table.
#[derive(Debug)]
pub(crate) struct StepResult {
    /// The step's name.
    pub(crate) name: &'static str,
    /// How long it took.
    pub(crate) took: Duration,
    /// Passed or skipped, or `Err(reason)`.
    pub(crate) outcome: Result<Outcome, String>,
}

/// Prints the table of steps.
pub(crate) fn print_table(steps: &[StepResult]) {
    println!();
    println!("{:<12} {:>9}  result", "step", "time");
    for step in steps {
        let (mark, note) = match &step.outcome {
            Ok(Outcome::Passed(note)) => ("ok", note.as_str()),
            Ok(Outcome::Skipped(reason)) => ("SKIPPED", reason.as_str()),
            Err(reason) => ("FAILED", reason.as_str()),
        };
        let first_line = note.lines().next().unwrap_or("");
        println!(
            "{:<12} {:>8.1}s  {mark}{}{first_line}",
            step.name,
            step.took.as_secs_f64(),
            if first_line.is_empty() { "" } else { ": " }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_test_lines_are_summed() {
        let output = "\
running 3 tests
test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s
   Doc-tests logalloc
test result: FAILED. 10 passed; 2 failed; 0 ignored; 0 measured; 5 filtered out; finished in 1.00s
";
        assert_eq!(
            parse_cargo_test(output),
            Counts {
                passed: 13,
                failed: 2,
                ignored: 1
            }
        );
    }

    #[test]
    fn no_test_result_line_counts_nothing() {
        assert_eq!(
            parse_cargo_test("Compiling x\nFinished\n"),
            Counts::default()
        );
    }

    #[test]
    fn nextest_summary_is_read() {
        let output = "\
        PASS [   0.004s] logalloc tests::a
────────────
     Summary [   2.345s] 45 tests run: 44 passed, 1 failed, 3 skipped
";
        assert_eq!(
            parse_nextest(output),
            Some(Counts {
                passed: 44,
                failed: 1,
                ignored: 3
            })
        );
        assert_eq!(parse_nextest("no summary here"), None);
    }

    #[test]
    fn nextest_timeouts_count_as_failures() {
        let output = "     Summary [ 606.6s] 685 tests run: 684 passed, 1 timed out, 0 skipped\n";
        assert_eq!(
            parse_nextest(output),
            Some(Counts {
                passed: 684,
                failed: 1,
                ignored: 0
            })
        );
    }

    #[test]
    fn nextest_summary_without_failures() {
        let output = "     Summary [   0.100s] 7 tests run: 7 passed, 0 skipped\n";
        assert_eq!(
            parse_nextest(output),
            Some(Counts {
                passed: 7,
                failed: 0,
                ignored: 0
            })
        );
    }
}
