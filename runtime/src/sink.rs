//! Sinks: collect into a vector, print, write text files, or call a function.

use std::fmt::Display;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
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
        CollectedRecords { records: Arc::clone(&self.records) }
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
            self.records.lock().unwrap_or_else(|p| p.into_inner()).append(&mut self.buffer);
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
                .map_err(|source| Error::Io { path: PathBuf::from("<stdout>"), source })?;
            self.buffer.clear();
        }
        Ok(())
    }
}

/// Writes `Display` lines to `dir/part-<subtask>`: to a hidden in-progress file first, synced
/// and renamed when the input ends, so a file named `part-*` is always complete.
pub(crate) struct TextFileSink {
    pub(crate) dir: PathBuf,
    pub(crate) subtask: usize,
    pub(crate) file: Option<(PathBuf, std::io::BufWriter<File>)>,
}

impl TextFileSink {
    fn writer(&mut self) -> Result<&mut std::io::BufWriter<File>> {
        if self.file.is_none() {
            std::fs::create_dir_all(&self.dir).map_err(|source| Error::Io { path: self.dir.clone(), source })?;
            let path = self.dir.join(format!(".part-{}.inprogress", self.subtask));
            let file = File::create(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
            self.file = Some((path, std::io::BufWriter::new(file)));
        }
        Ok(&mut self.file.as_mut().expect("just created").1)
    }
}

impl<T: Display + 'static> Operator<T, ()> for TextFileSink {
    fn process(&mut self, _ts: i64, value: T, _out: &mut Outputs<(), T>) -> Result<()> {
        let dir = self.dir.clone();
        writeln!(self.writer()?, "{value}").map_err(|source| Error::Io { path: dir, source })
    }
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<(), T>) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self, _out: &mut Outputs<(), T>) -> Result<()> {
        self.writer()?;
        let (path, writer) = self.file.take().expect("opened above");
        let file = writer.into_inner().map_err(|e| Error::Io { path: path.clone(), source: e.into_error() })?;
        file.sync_all().map_err(|source| Error::Io { path: path.clone(), source })?;
        let target = self.dir.join(format!("part-{}", self.subtask));
        std::fs::rename(&path, &target).map_err(|source| Error::Io { path: target, source })
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
