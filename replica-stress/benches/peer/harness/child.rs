//! A child process's work: `load` (write every partition once, then
//! settle and close), `write` (the write shape for the phase's duration)
//! or `read` (reopen, then checked point reads for the phase's duration,
//! each thread appending the keys it reads to its trace file).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::data::{Keys, ValueBook};
use super::engine::{self, Engine, ReadCheck};
use super::measure::{self, ThreadRecord};
use super::{KeyChoice, Result, Shape, engine_of, keys_of, number, string};

/// Runs the child's `spec` and returns its result.
///
/// # Errors
/// A bad spec, or an engine that fails to open, load, settle or close
/// (errors of single operations are counted, not returned).
pub(crate) fn run(spec: &Value) -> Result<Value> {
    let kind = engine_of(spec)?;
    let dir = PathBuf::from(string(spec, "dir")?);
    let budget = number(spec, "budget")?;
    let cache = number(spec, "cache")?;
    let shape = Shape {
        rows: u16::try_from(number(spec, "rows")?)?,
        row_bytes: usize::try_from(number(spec, "row_bytes")?)?,
    };
    let partitions = number(spec, "partitions")?;
    let threads = usize::try_from(number(spec, "threads")?)?;
    let duration = Duration::from_millis(number(spec, "duration_ms")?);
    let values = ValueBook::new(shape.row_bytes);
    match string(spec, "role")? {
        "load" => {
            let engine = engine::open(kind, &dir, budget, cache, false)?;
            let started = Instant::now();
            load(&*engine, shape, partitions, threads, &values)?;
            engine.settle()?;
            let figures = engine.figures();
            engine.close()?;
            Ok(
                json!({"loaded": partitions, "seconds": started.elapsed().as_secs_f64(), "engine": figures}),
            )
        }
        "write" => {
            let engine = engine::open(kind, &dir, budget, cache, true)?;
            let values = &values;
            let mut result = phase(&*engine, threads, duration, |t| {
                let mut rng = SmallRng::seed_from_u64(0x35_5000 + t as u64);
                move |engine: &dyn Engine, record: &mut ThreadRecord, phase_start| {
                    let p = rng.gen_range(0..partitions);
                    let began = Instant::now();
                    match engine.write(p, shape, values) {
                        Ok(()) => record.completed(phase_start, began, Instant::now()),
                        Err(e) => record.failed(&e),
                    }
                    Ok(())
                }
            })?;
            result["engine"] = engine.figures();
            engine.close()?;
            Ok(result)
        }
        "read" => {
            let keys = keys_of(spec)?;
            if partitions >= u64::from(u32::MAX) {
                return Err(format!("{partitions} partitions: traces hold 32-bit keys").into());
            }
            let trace_dir = PathBuf::from(string(spec, "trace_dir")?);
            let engine = engine::open(kind, &dir, budget, cache, true)?;
            let before = engine.figures();
            let mut result = read_phase(
                &*engine, keys, shape, partitions, threads, duration, &values, &trace_dir,
            )?;
            result["engine"] = engine.figures();
            result["engine_before"] = before;
            engine.close()?;
            Ok(result)
        }
        other => Err(format!("unknown child role {other:?}").into()),
    }
}

/// Writes partitions `0..partitions` once each, `threads` at a time.
fn load(
    engine: &dyn Engine,
    shape: Shape,
    partitions: u64,
    threads: usize,
    values: &ValueBook,
) -> Result<()> {
    let threads = threads as u64;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> Result<()> {
                    let mut p = t;
                    while p < partitions {
                        engine.write(p, shape, values)?;
                        p += threads;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().map_err(|_| "a load thread panicked")?)
    })
}

#[allow(
    clippy::too_many_arguments,
    reason = "one phase's parameters, each used once"
)]
fn read_phase(
    engine: &dyn Engine,
    keys: KeyChoice,
    shape: Shape,
    partitions: u64,
    threads: usize,
    duration: Duration,
    values: &ValueBook,
    trace_dir: &Path,
) -> Result<Value> {
    let traces = (0..threads)
        .map(|t| {
            Ok(BufWriter::with_capacity(
                1 << 16,
                File::create(trace_dir.join(format!("{t}.trace")))?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut traces: Vec<Option<BufWriter<File>>> = traces.into_iter().map(Some).collect();
    let result = phase(engine, threads, duration, |t| {
        let mut chooser = Keys::new(keys, partitions, t as u64);
        let mut trace = traces[t].take();
        move |engine: &dyn Engine, record: &mut ThreadRecord, phase_start| {
            let p = chooser.next();
            if let Some(w) = trace.as_mut() {
                w.write_all(&(p as u32).to_le_bytes())?;
            }
            let began = Instant::now();
            match engine.read(p, shape, values) {
                Ok(check) => {
                    record.completed(phase_start, began, Instant::now());
                    record.checked(match check {
                        ReadCheck::Good => None,
                        ReadCheck::Bad(why) => Some(why),
                    });
                }
                Err(e) => record.failed(&e),
            }
            Ok(())
        }
    });
    // The trace writers moved into the threads' closures, which dropped
    // them (flushing) when the phase ended.
    let mut result = result?;
    result["reads"] = result["ops"].clone();
    Ok(result)
}

/// Runs `threads` threads for `duration`, each repeating the operation
/// `make(thread)` returns until the time is up, and summarizes the phase;
/// a periodic sync of the engine's log runs beside them if it wants one.
fn phase<Op>(
    engine: &dyn Engine,
    threads: usize,
    duration: Duration,
    mut make: impl FnMut(usize) -> Op,
) -> Result<Value>
where
    Op: FnMut(&dyn Engine, &mut ThreadRecord, Instant) -> Result<()> + Send,
{
    let ops: Vec<Op> = (0..threads).map(&mut make).collect();
    let cpu_before = measure::cpu_seconds()?;
    let start = Instant::now();
    let deadline = start + duration;
    let records = std::thread::scope(|s| -> Result<Vec<ThreadRecord>> {
        if let Some(period) = engine.sync_period() {
            s.spawn(move || {
                let mut next = Instant::now() + period;
                while next < deadline {
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    if let Err(e) = engine.sync() {
                        eprintln!("peer bench: the journal's sync failed: {e}");
                    }
                    next += period;
                }
            });
        }
        let handles: Vec<_> = ops
            .into_iter()
            .map(|mut op| {
                s.spawn(move || -> Result<ThreadRecord> {
                    let mut record = ThreadRecord::new(duration)?;
                    while Instant::now() < deadline {
                        op(engine, &mut record, start)?;
                    }
                    Ok(record)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a bench thread panicked")?)
            .collect()
    })?;
    let elapsed = start.elapsed();
    let cpu = measure::cpu_seconds()? - cpu_before;
    measure::summarize(records, elapsed, cpu)
}
