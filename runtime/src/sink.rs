//! Sinks: collect into a vector, print, write text files, or call a function.

use std::fmt::Display;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::operator::{Operator, Outputs};

/// The records a `collect` sink received, readable after the job ran.
#[derive(Debug)]
pub struct CollectedRecords<T> {
    pub(crate) records: Arc<Mutex<Vec<T>>>,
}

impl<T> Clone for CollectedRecords<T> {
    fn clone(&self) -> Self {
        CollectedRecords {
            records: Arc::clone(&self.records),
        }
    }
}

impl<T> CollectedRecords<T> {
    /// Takes the records received so far (in arrival order per subtask).
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

pub(crate) struct CollectSink<T> {
    pub(crate) records: Arc<Mutex<Vec<T>>>,
    pub(crate) buffer: Vec<T>,
}

impl<T: 'static> Operator<T, ()> for CollectSink<T> {
    #[inline]
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        self.buffer.push(value);
        Ok(())
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn end_of_activation(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        if !self.buffer.is_empty() {
            self.records
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .append(&mut self.buffer);
        }
        Ok(())
    }
}

/// Prints `Display` lines to stdout; with `prefix`, Flink's `N> ` subtask prefix.
pub(crate) struct PrintSink {
    pub(crate) prefix: Option<String>,
    pub(crate) buffer: Vec<u8>,
}

impl<T: Display + 'static> Operator<T, ()> for PrintSink {
    #[inline]
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        if let Some(p) = &self.prefix {
            self.buffer.extend_from_slice(p.as_bytes());
        }
        let _ = writeln!(self.buffer, "{value}");
        Ok(())
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn end_of_activation(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        if !self.buffer.is_empty() {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&self.buffer)
                .and_then(|()| stdout.flush())
                .map_err(|source| Error::Io {
                    path: PathBuf::from("<stdout>"),
                    source,
                })?;
            self.buffer.clear();
        }
        Ok(())
    }
}

/// Writes `Display` lines to files in `dir`, one file per subtask and epoch, committed with
/// the checkpoints (two-phase, as Flink's file sink):
///
/// - records of epoch `e` go to `.part-<subtask>-<e>.inprogress`;
/// - when the subtask writes its part of checkpoint `e`, the files of epochs up to `e` are
///   synced and renamed to `.part-<subtask>-<e>.pending`;
/// - when checkpoint `e` completes, the coordinator renames them to `part-<subtask>-<e>`
///   (published). A job that runs to its end publishes everything at the end.
///
/// After a crash, the restore publishes what the restored checkpoint covered and deletes the
/// rest, which the restored job writes again: every published line is written exactly once.
/// Without checkpoints everything is epoch 0 and published at the end.
pub(crate) struct TextFileSink {
    pub(crate) dir: PathBuf,
    pub(crate) subtask: usize,
    pub(crate) epoch: u64,
    pub(crate) open: std::collections::BTreeMap<u64, (PathBuf, std::io::BufWriter<File>)>,
}

impl TextFileSink {
    pub(crate) fn new(dir: PathBuf, subtask: usize, job: &crate::job::JobShared) -> Result<Self> {
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        job.add_sink_dir(&dir);
        Ok(TextFileSink {
            dir,
            subtask,
            epoch: 0,
            open: Default::default(),
        })
    }

    fn writer(&mut self) -> Result<&mut std::io::BufWriter<File>> {
        let open = match self.open.entry(self.epoch) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let path = self
                    .dir
                    .join(format!(".part-{}-{}.inprogress", self.subtask, self.epoch));
                let file = File::create(&path).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                v.insert((path, std::io::BufWriter::new(file)))
            }
        };
        Ok(&mut open.1)
    }

    /// Syncs and renames the files of epochs up to `epoch` to pending.
    fn prepare(&mut self, epoch: u64) -> Result<()> {
        let done: Vec<u64> = self.open.range(..=epoch).map(|(e, _)| *e).collect();
        for e in done {
            let Some((path, writer)) = self.open.remove(&e) else {
                continue;
            };
            let file = writer.into_inner().map_err(|err| Error::Io {
                path: path.clone(),
                source: err.into_error(),
            })?;
            file.sync_all().map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let pending = self.dir.join(format!(".part-{}-{e}.pending", self.subtask));
            std::fs::rename(&path, &pending).map_err(|source| Error::Io {
                path: pending,
                source,
            })?;
        }
        Ok(())
    }
}

/// The epoch of a sink file name (`part-<subtask>-<epoch>`, with a prefix or suffix).
fn file_epoch(name: &str) -> Option<u64> {
    let core = name
        .trim_start_matches('.')
        .trim_end_matches(".pending")
        .trim_end_matches(".inprogress");
    core.strip_prefix("part-")?.rsplit('-').next()?.parse().ok()
}

/// Publishes the pending files of `dir` up to `epoch` (all of them with `None`).
pub(crate) fn publish(dir: &Path, epoch: Option<u64>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut renamed = false;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".pending") {
            continue;
        }
        if file_epoch(&name).is_some_and(|e| epoch.is_none_or(|limit| e <= limit)) {
            let published = dir.join(name.trim_start_matches('.').trim_end_matches(".pending"));
            match std::fs::rename(entry.path(), &published) {
                Ok(()) => renamed = true,
                // Published meanwhile by another process of the job (restores run in each).
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(Error::Io {
                        path: published,
                        source,
                    })
                }
            }
        }
    }
    if renamed {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
    }
    Ok(())
}

/// Before a restored run: publishes what checkpoint `epoch` covered, deletes what it did not.
pub(crate) fn recover(dir: &Path, epoch: u64) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    publish(dir, Some(epoch))?;
    for entry in std::fs::read_dir(dir)
        .map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".part-")
            && (name.ends_with(".inprogress") || name.ends_with(".pending"))
        {
            match std::fs::remove_file(entry.path()) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::Io {
                        path: entry.path(),
                        source: err,
                    })
                }
                _ => {}
            }
        }
    }
    Ok(())
}

impl<T: Display + 'static> Operator<T, ()> for TextFileSink {
    fn begin_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        let dir = self.dir.clone();
        writeln!(self.writer()?, "{value}").map_err(|source| Error::Io { path: dir, source })
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn snapshot(&mut self, epoch: u64, _kstate: &Path) -> Result<Vec<u8>> {
        self.prepare(epoch)?;
        Ok(Vec::new())
    }
    fn finish(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        self.prepare(u64::MAX)
    }
}

/// Calls a function with every record.
pub(crate) struct FnSink<F>(pub(crate) Arc<F>);

impl<T: 'static, F: Fn(T) + Send + Sync + 'static> Operator<T, ()> for FnSink<F> {
    #[inline]
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        (self.0)(value);
        Ok(())
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_names_carry_their_epoch() {
        assert_eq!(super::file_epoch(".part-1-42.pending"), Some(42));
        assert_eq!(super::file_epoch(".part-0-7.inprogress"), Some(7));
        assert_eq!(super::file_epoch("part-3-0"), Some(0));
        assert_eq!(super::file_epoch("other"), None);
    }
}
