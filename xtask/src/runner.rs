//! Running cargo (and other programs) from the workspace root.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Changes the current directory to the workspace root (the parent of the
/// `xtask` package), so every task behaves the same wherever it is called.
pub(crate) fn enter_workspace_root() -> Result<(), String> {
    let root = workspace_root();
    std::env::set_current_dir(&root)
        .map_err(|e| format!("cannot enter the workspace root {}: {e}", root.display()))
}

/// The workspace root: the parent of this package's manifest directory.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest_dir.to_path_buf())
}

/// The cargo that invoked us (`$CARGO`), or `cargo` from `PATH`.
fn cargo_program() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"))
}

/// A command about to run, with a human-readable rendering for logs.
#[derive(Debug)]
pub(crate) struct Job {
    command: Command,
    shown: String,
}

/// Starts building a cargo invocation with `args`.
pub(crate) fn cargo(args: &[&str]) -> Job {
    let mut command = Command::new(cargo_program());
    command.args(args);
    Job {
        command,
        shown: format!("cargo {}", args.join(" ")),
    }
}

/// Starts building an invocation of any program.
pub(crate) fn program(name: &str, args: &[&str]) -> Job {
    let mut command = Command::new(name);
    command.args(args);
    Job {
        command,
        shown: format!("{name} {}", args.join(" ")),
    }
}

impl Job {
    /// Sets an environment variable for the command.
    pub(crate) fn env(mut self, key: &str, value: &str) -> Self {
        self.command.env(key, value);
        self.shown = format!("{key}={value} {}", self.shown);
        self
    }

    /// Runs the command with inherited output; fails on a non-zero exit.
    pub(crate) fn status(mut self) -> Result<(), String> {
        println!("$ {}", self.shown);
        let status = self
            .command
            .status()
            .map_err(|e| format!("cannot start `{}`: {e}", self.shown))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{}` failed ({status})", self.shown))
        }
    }

    /// Runs the command quietly and returns its standard output; fails on
    /// a non-zero exit, with its standard error in the message.
    pub(crate) fn output(mut self) -> Result<String, String> {
        let output = self
            .command
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("cannot start `{}`: {e}", self.shown))?;
        if output.status.success() {
            String::from_utf8(output.stdout)
                .map_err(|e| format!("`{}` printed non-UTF-8 output: {e}", self.shown))
        } else {
            Err(format!(
                "`{}` failed ({}): {}",
                self.shown,
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }

    /// Runs the command, echoing its stdout and stderr as they come, and
    /// returns everything it printed (both streams, interleaved by line).
    /// Fails on a non-zero exit, with the captured text in the error too.
    pub(crate) fn tee(mut self) -> Result<String, (String, String)> {
        println!("$ {}", self.shown);
        let mut child = match self
            .command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => return Err((format!("cannot start `{}`: {e}", self.shown), String::new())),
        };
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let readers: Vec<_> = [
            stdout.map(|s| Box::new(s) as Box<dyn Read + Send>),
            stderr.map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        .map(|stream| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
        drop(tx);
        let mut captured = String::new();
        let mut out = std::io::stdout();
        for line in rx {
            // Echo failures are not worth failing the task for.
            let _ = writeln!(out, "{line}");
            captured.push_str(&line);
            captured.push('\n');
        }
        for reader in readers {
            let _ = reader.join();
        }
        let status = child.wait().map_err(|e| {
            (
                format!("cannot wait for `{}`: {e}", self.shown),
                String::new(),
            )
        })?;
        if status.success() {
            Ok(captured)
        } else {
            Err((format!("`{}` failed ({status})", self.shown), captured))
        }
    }
}

/// The host target triple, as `rustc -vV` reports it.
pub(crate) fn host_triple() -> Result<String, String> {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .map_err(|e| format!("cannot run `rustc -vV`: {e}"))?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|host| host.trim().to_string())
        .ok_or_else(|| "`rustc -vV` printed no host line".to_string())
}

/// Whether a program can be started from `PATH` (`program --version` runs).
pub(crate) fn has_program(name: &str, version_args: &[&str]) -> bool {
    Command::new(name)
        .args(version_args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Whether `cargo <subcommand> --version` works (e.g. `nextest`, `fuzz`).
pub(crate) fn has_cargo_subcommand(toolchain: Option<&str>, subcommand: &str) -> bool {
    let mut command = Command::new(if toolchain.is_some() {
        OsString::from("cargo")
    } else {
        cargo_program()
    });
    if let Some(toolchain) = toolchain {
        command.arg(format!("+{toolchain}"));
    }
    command
        .args([subcommand, "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Starts building a cargo invocation with another toolchain
/// (`cargo +TOOLCHAIN args...`, through rustup's proxy).
pub(crate) fn cargo_with_toolchain(toolchain: &str, args: &[&str]) -> Job {
    let mut command = Command::new("cargo");
    command.arg(format!("+{toolchain}")).args(args);
    Job {
        command,
        shown: format!("cargo +{toolchain} {}", args.join(" ")),
    }
}

/// Whether rustup has `toolchain` installed (`cargo +TOOLCHAIN --version`
/// runs). Never installs it.
pub(crate) fn has_toolchain(toolchain: &str) -> bool {
    Command::new("cargo")
        .arg(format!("+{toolchain}"))
        .arg("--version")
        // rustup would otherwise download a missing toolchain on first use.
        .env("RUSTUP_AUTO_INSTALL", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
