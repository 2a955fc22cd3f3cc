//! The `examples` step: every example program of every workspace crate
//! runs (`cargo run --quiet --example NAME -p PACKAGE`) and exits
//! successfully, so the examples a crate's README names cannot rot; and
//! each crate a user is most likely to pick alone ships at least one.

use std::time::Instant;

use crate::metadata::Package;
use crate::runner;

/// The packages that must ship an example program when they are in the
/// workspace (the crates a user is most likely to pick alone).
/// `compaction` and `row-cache` are being written on other branches; they
/// are required as soon as they are members named in the scheme.
pub(crate) const MUST_HAVE_EXAMPLES: &[&str] = &[
    "replmem-logalloc",
    "replmem-region-group",
    "replmem-memtable",
    "replmem-sstable",
    "replmem-commitlog",
    "replmem-compaction",
    "replmem-row-cache",
];

/// The members of `required` that are in `packages` but have no example.
pub(crate) fn missing<'a>(packages: &[Package], required: &[&'a str]) -> Vec<&'a str> {
    required
        .iter()
        .copied()
        .filter(|name| {
            packages
                .iter()
                .any(|p| p.name == *name && p.examples.is_empty())
        })
        .collect()
}

/// Runs every example of `packages`; fails naming each package that must
/// have one and has none, and each example that failed (with its standard
/// error).
pub(crate) fn run(packages: &[Package], required: &[&str]) -> Result<String, String> {
    let mut problems: Vec<String> = missing(packages, required)
        .into_iter()
        .map(|name| {
            format!("`{name}` has no example program: add one under its examples/ and name it in its README.md")
        })
        .collect();
    let mut ran = 0;
    for package in packages {
        for example in &package.examples {
            let started = Instant::now();
            let result =
                runner::cargo(&["run", "--quiet", "--example", example, "-p", &package.name])
                    .output();
            match result {
                Ok(stdout) => {
                    ran += 1;
                    println!(
                        "example {}/{example}: ok in {:.2}s ({} lines of output)",
                        package.name,
                        started.elapsed().as_secs_f64(),
                        stdout.lines().count()
                    );
                }
                Err(reason) => {
                    println!("example {}/{example}: FAILED", package.name);
                    problems.push(format!(
                        "example `{example}` of `{}`: {reason}",
                        package.name
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        Err(problems.join("\n"))
    } else if ran == 0 {
        Err("no example program ran".to_string())
    } else {
        Ok(format!("({ran} example programs ran)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{parse, tests::sample};

    #[test]
    fn a_required_package_without_an_example_is_named() {
        let packages = parse(&sample(None)).expect("valid");
        // `lib` has the example `tour`; `tool` has none.
        assert!(missing(&packages, &["lib"]).is_empty());
        assert_eq!(missing(&packages, &["lib", "tool"]), ["tool"]);
        // A required package that is not (yet) a member is not asked for.
        assert!(missing(&packages, &["not-a-member"]).is_empty());
    }

    #[test]
    fn every_pickable_crate_of_the_workspace_has_an_example() {
        let packages = crate::metadata::workspace().expect("cargo metadata");
        assert_eq!(missing(&packages, MUST_HAVE_EXAMPLES), Vec::<&str>::new());
    }
}
