//! `replica-stress`: a write (or read, or mixed) load against an embedded
//! [`replica::Database`], reported the way cassandra-stress reports. With
//! no arguments it writes for 30 seconds to a temporary directory with a
//! dirty-memory budget sized to the machine, then removes the directory.
//! `--help` lists the options; `--compare` runs both flush policies on the
//! same load and prints the ratios.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use replica::stress::{DatabaseFactory, StressOptions, execute};

fn main() -> ExitCode {
    let options = StressOptions::parse();
    let mut factory = DatabaseFactory::new(&options);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = execute(&options, &mut factory, &mut out);
    let _ = out.flush();
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replica-stress: {e}");
            ExitCode::FAILURE
        }
    }
}
