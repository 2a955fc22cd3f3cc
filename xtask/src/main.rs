//! Workspace tasks (being built).
#![forbid(unsafe_code)]

fn main() {
    println!("tasks: test, bench, stress (being built)");
}
