//! The checkpoint store of a run: writes each operator's parts of a checkpoint, completes it
//! with `_metadata`, retains the last ones, copies savepoints, and ends a finished job.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use typeinfo::{DataInputView, DataOutputView};

use crate::checkpoint::format::checkpoint_epoch;
use crate::checkpoint::format::checkpoint_name;
use crate::checkpoint::format::find_part_in;
use crate::checkpoint::format::operator_key;
use crate::checkpoint::format::shown;
use crate::checkpoint::format::subtask_file;
use crate::checkpoint::format::Metadata;
use crate::checkpoint::format::OperatorPart;
use crate::checkpoint::format::ENDED_DIR;
use crate::checkpoint::format::FINAL_DIR;
use crate::checkpoint::format::FINISHED_FILE;
use crate::checkpoint::format::FINISHED_MARK;
use crate::checkpoint::format::METADATA_FILE;
use crate::checkpoint::native_part::{self, NativePart, SharedFiles, SHARED_DIR};
use crate::checkpoint::restore::copy_checkpoint;
use crate::checkpoint::storage::{join, scratch_dir, Storage};
use crate::checkpoint::upload::{Job, Uploads};
use crate::config::CheckpointConfig;
use crate::error::{Error, Result};
use crate::plan::{StreamGraph, StreamNode};

/// Where processes leave savepoint requests for the coordinator.
const REQUESTS_DIR: &str = "requests";
/// The request of a stop with a savepoint, under [`REQUESTS_DIR`].
const STOP_REQUEST: &str = "stop";
/// The request to cancel the job, under [`REQUESTS_DIR`].
const CANCEL_REQUEST: &str = "cancel";

/// The checkpoints of one job under its checkpoint directory (local or in an object store):
/// the only code that knows the layout (`chk-<epoch>/<operator>/subtask-<i>.{ostate,kstate}`,
/// `_metadata`), writes parts atomically, completes checkpoints, retains the last ones and
/// cleans up before a run.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointStore {
    root: Storage,
    /// RocksDB state is written as incremental parts.
    incremental: bool,
    /// The shared objects each completed checkpoint refers to, by epoch, as read at
    /// retention (its parts never change; a run's store starts empty).
    objects: std::sync::Arc<std::sync::Mutex<BTreeMap<u64, Vec<String>>>>,
    /// Checkpoints known to be complete (a completed checkpoint stays complete until it is
    /// deleted, and its directory then leaves the listing), so that listing the checkpoints
    /// asks the storage only about the others.
    known_complete: std::sync::Arc<std::sync::Mutex<BTreeSet<u64>>>,
    /// Checkpoints known never to complete: seen without `_metadata` while a newer one was
    /// complete (the coordinator completes checkpoints in order, and a newer one supersedes
    /// any older one still waiting), so that listing the checkpoints asks about each once.
    abandoned: std::sync::Arc<std::sync::Mutex<BTreeSet<u64>>>,
    /// The parts this process wrote, per epoch and ended (see
    /// [`parts_written`](Self::parts_written)).
    written: std::sync::Arc<std::sync::Mutex<PartsWritten>>,
    /// The bytes of the parts this process wrote into checkpoints not yet completed, by
    /// their path: the coordinator reads them back (committables, incremental parts) without
    /// asking the storage. A checkpoint's files are written once and never changed.
    own: std::sync::Arc<std::sync::Mutex<OwnFiles>>,
    /// The files of each completed checkpoint in an object store (see
    /// [`files`](Self::files)).
    files: std::sync::Arc<std::sync::Mutex<BTreeMap<u64, Vec<String>>>>,
    /// The lanes that write the run's parts off the processing threads.
    uploads: Uploads,
    /// Consecutive checkpoints a subtask may fail to write before the job fails.
    tolerable_failures: u32,
}

impl CheckpointStore {
    /// The store at `location` (a path or a storage URL), writing whole checkpoints.
    pub(crate) fn open(location: &Path) -> Result<Self> {
        Ok(CheckpointStore {
            root: Storage::open(location)?,
            incremental: false,
            objects: Default::default(),
            known_complete: Default::default(),
            abandoned: Default::default(),
            written: Default::default(),
            own: Default::default(),
            files: Default::default(),
            uploads: Uploads::default(),
            tolerable_failures: 0,
        })
    }

    /// The store of `config`'s directory, incremental as it says.
    pub(crate) fn of(config: &CheckpointConfig) -> Result<Self> {
        Ok(CheckpointStore {
            root: Storage::open(&config.dir)?,
            incremental: config.incremental,
            objects: Default::default(),
            known_complete: Default::default(),
            abandoned: Default::default(),
            written: Default::default(),
            own: Default::default(),
            files: Default::default(),
            uploads: Uploads::default(),
            tolerable_failures: config.tolerable_failures,
        })
    }

    /// The lanes that write the run's parts asynchronously.
    pub(crate) fn uploads(&self) -> &Uploads {
        &self.uploads
    }

    /// Consecutive checkpoints a subtask may fail to write before the job fails.
    pub(crate) fn tolerable_failures(&self) -> u32 {
        self.tolerable_failures
    }

    /// The checkpoint root.
    pub(crate) fn root(&self) -> &Storage {
        &self.root
    }

    /// The directory of operator `key` in checkpoint `epoch` (relative to the root).
    fn operator_dir(epoch: u64, key: &str) -> String {
        join(&checkpoint_name(epoch), key)
    }

    /// Where and how subtask `subtask` of operator `key` writes the keyed state of
    /// checkpoint `epoch`.
    pub(crate) fn keyed_part(&self, epoch: u64, key: &str, subtask: usize) -> KeyedPart<'_> {
        let dir = Self::operator_dir(epoch, key);
        KeyedPart {
            store: self,
            full: join(&dir, &subtask_file(subtask, "kstate")),
            native: join(&dir, &subtask_file(subtask, "native")),
            full_only: false,
            key: key.to_owned(),
            epoch,
            subtask,
            deferred: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Where an operator subtask whose input ended (while the job goes on) writes its final
    /// keyed state: a full file among its ended parts.
    pub(crate) fn ended_keyed_part(&self, epoch: u64, key: &str, subtask: usize) -> KeyedPart<'_> {
        let dir = join(ENDED_DIR, key);
        KeyedPart {
            store: self,
            full: join(&dir, &subtask_file(subtask, "kstate")),
            native: join(&dir, &subtask_file(subtask, "native")),
            full_only: true,
            key: key.to_owned(),
            epoch,
            subtask,
            deferred: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Writes the final operator state of an operator subtask whose input ended.
    pub(crate) fn write_ended_operator_state(
        &self,
        key: &str,
        subtask: usize,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let rel = join(&join(ENDED_DIR, key), &subtask_file(subtask, "opstate"));
        self.root.write_with(&rel, write)
    }

    /// Writes the final part of an operator subtask whose input ended, after its keyed and
    /// operator state ([`ended_keyed_part`](Self::ended_keyed_part),
    /// [`write_ended_operator_state`](Self::write_ended_operator_state)): every later
    /// checkpoint gets these files, marked finished, so that a restore neither waits for
    /// the subtask nor ends its input a second time (Flink's checkpoints after tasks
    /// finished).
    pub(crate) fn write_ended_operator_part(
        &self,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        let dir = join(ENDED_DIR, key);
        self.root.put(
            &join(&dir, &subtask_file(subtask, "finished")),
            FINISHED_MARK,
        )?;
        part.write_to(&self.root, &dir, subtask)?;
        self.parts().ended += 1;
        Ok(())
    }

    /// The synchronous half of writing the operator state of a subtask in checkpoint
    /// `epoch`: `write` writes it into a scratch file at once; its upload is returned, to run
    /// on the subtask's upload lane.
    pub(crate) fn snapshot_operator_state(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<Job> {
        let rel = join(
            &Self::operator_dir(epoch, key),
            &subtask_file(subtask, "opstate"),
        );
        self.write_deferred(rel, write)
    }

    /// Writes the file at `rel` with `write` into a scratch file now (the synchronous half)
    /// and returns its upload into the checkpoint directory (a copy, synced and renamed, when
    /// the directory is local), so that a full or failing checkpoint directory fails the
    /// checkpoint on the upload lane, not the job.
    fn write_deferred(&self, rel: String, write: impl FnOnce(&Path) -> Result<()>) -> Result<Job> {
        let scratch = scratch_dir()?;
        let file = scratch.path().join("file");
        write(&file)?;
        let root = self.root.clone();
        Ok(Box::new(move || {
            let _scratch = scratch;
            root.put_file(&rel, &file).map(drop)
        }))
    }

    /// The write of the operator-local part of one subtask, to run after the rest of its
    /// part (see [`write_part`](Self::write_part)).
    pub(crate) fn part_job(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        part: OperatorPart,
    ) -> Job {
        let (store, key) = (self.clone(), key.to_owned());
        Box::new(move || store.write_part(epoch, &key, subtask, &part))
    }

    /// Writes the operator-local part of one subtask (written last: its presence says the
    /// subtask's part of the checkpoint is whole).
    pub(crate) fn write_part(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        let dir = Self::operator_dir(epoch, key);
        let bytes = part.write_to(&self.root, &dir, subtask)?;
        self.remember(epoch, join(&dir, &subtask_file(subtask, "ostate")), bytes);
        *self.parts().per_epoch.entry(epoch).or_default() += 1;
        Ok(())
    }

    /// Keeps the bytes of a file this process wrote into checkpoint `epoch` at `rel`.
    fn remember(&self, epoch: u64, rel: String, bytes: Vec<u8>) {
        self.own
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((epoch, rel), bytes.into());
    }

    /// The file at `rel` of checkpoint `epoch`: from memory when this process wrote it,
    /// otherwise from the storage.
    fn read_file(&self, epoch: u64, rel: &str) -> Result<std::sync::Arc<[u8]>> {
        let own = self.own.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bytes) = own.get(&(epoch, rel.to_owned())) {
            return Ok(std::sync::Arc::clone(bytes));
        }
        drop(own);
        Ok(self.root.read(rel)?.into())
    }

    fn parts(&self) -> std::sync::MutexGuard<'_, PartsWritten> {
        self.written.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many operator parts this process wrote for checkpoint `epoch`, plus the final
    /// parts of its subtasks that ended (which stand in for theirs in every later
    /// checkpoint): when every process of the job is this one, the checkpoint cannot be
    /// whole before this reaches the number of subtasks, so the coordinator lists its
    /// directory (a request to an object store) only then.
    pub(crate) fn parts_written(&self, epoch: u64) -> usize {
        let parts = self.parts();
        parts.per_epoch.get(&epoch).copied().unwrap_or(0) + parts.ended
    }

    /// Reads the operator part of one subtask of checkpoint `epoch`.
    pub(crate) fn read_part(&self, epoch: u64, key: &str, subtask: usize) -> Result<OperatorPart> {
        let rel = join(
            &Self::operator_dir(epoch, key),
            &subtask_file(subtask, "ostate"),
        );
        OperatorPart::decode(&shown(&self.root, &rel), &self.read_file(epoch, &rel)?)
    }

    /// Writes the final part of a sink's subtask: what it had not committed when its input
    /// ended (see the module docs).
    pub(crate) fn write_final_part(
        &self,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        part.write_to(&self.root, &join(FINAL_DIR, key), subtask)
            .map(drop)
    }

    /// The final part of a sink's subtask, if it wrote one.
    pub(crate) fn find_final_part(
        &self,
        key: &str,
        subtask: usize,
    ) -> Result<Option<OperatorPart>> {
        find_part_in(&self.root, &join(FINAL_DIR, key), subtask)
    }

    /// Writes the last part of a source subtask whose input ended: its part of checkpoint
    /// `epoch`, and the copy that stands in for it in every later checkpoint.
    pub(crate) fn write_ended_source_part(
        &self,
        epoch: u64,
        key: &str,
        subtask: usize,
        part: &OperatorPart,
    ) -> Result<()> {
        self.write_part(epoch, key, subtask, part)?;
        part.write_to(&self.root, &join(ENDED_DIR, key), subtask)?;
        self.parts().ended += 1;
        Ok(())
    }

    /// Gives checkpoint `epoch` the last part of every subtask that ended before it (a
    /// source at its end, an operator whose every input ended: they write no more parts),
    /// with an operator's final keyed and operator state and its `finished` mark;
    /// `written` is what the checkpoint's directory holds (names relative to it), and
    /// gains the parts written here.
    fn fill_ended(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        written: &mut BTreeSet<String>,
    ) -> Result<()> {
        for n in graph.nodes() {
            let key = Self::node_key(n);
            let ended = join(ENDED_DIR, &key);
            for s in 0..n.parallelism() as usize {
                let name = join(&key, &subtask_file(s, "ostate"));
                if written.contains(&name) {
                    continue;
                }
                let Some(part) = find_part_in(&self.root, &ended, s)? else {
                    continue;
                };
                let dir = Self::operator_dir(epoch, &key);
                for kind in ["kstate", "opstate", "finished"] {
                    let from = join(&ended, &subtask_file(s, kind));
                    if self.root.exists(&from)? {
                        let bytes = self.root.read(&from)?;
                        self.root.put(&join(&dir, &subtask_file(s, kind)), &bytes)?;
                        written.insert(join(&key, &subtask_file(s, kind)));
                    }
                }
                self.write_part(epoch, &key, s, &part)?;
                written.insert(name);
            }
        }
        Ok(())
    }

    /// Marks the job as run to its end (written whole or not at all): from now on its final
    /// parts are the output to publish, and a restore from this directory only publishes
    /// them again.
    pub(crate) fn mark_finished(&self) -> Result<()> {
        self.root.put(FINISHED_FILE, b"typeinfo job finished\n")
    }

    /// Whether a job that keeps its checkpoints in `root` ran to its end.
    ///
    /// # Errors
    ///
    /// The storage cannot tell (never taken for "not finished").
    pub(crate) fn is_finished(root: &Storage) -> Result<bool> {
        root.exists(FINISHED_FILE)
    }

    /// The latest completed checkpoint's epoch.
    ///
    /// # Errors
    ///
    /// The storage cannot be listed.
    pub(crate) fn latest_completed(&self) -> Result<Option<u64>> {
        Ok(self
            .checkpoints()?
            .into_iter()
            .filter(|(_, complete)| *complete)
            .map(|(epoch, _)| epoch)
            .next_back())
    }

    /// Every checkpoint directory with whether it is complete, oldest first (as
    /// [`checkpoints`], asking the storage only about those not known complete).
    fn checkpoints(&self) -> Result<Vec<(u64, bool)>> {
        let known = self.known_complete().clone();
        let newest_complete = known.last().copied();
        let abandoned = self.abandoned_set().clone();
        let mut out = Vec::new();
        for name in self.root.list_dirs("")? {
            if let Some(epoch) = checkpoint_epoch(&name) {
                let complete = if known.contains(&epoch) {
                    true
                } else if abandoned.contains(&epoch) {
                    false
                } else if self.root.exists(&join(&name, METADATA_FILE))? {
                    self.known_complete().insert(epoch);
                    true
                } else {
                    if newest_complete.is_some_and(|n| epoch < n) {
                        self.abandoned_set().insert(epoch);
                    }
                    false
                };
                out.push((epoch, complete));
            }
        }
        out.sort();
        Ok(out)
    }

    fn known_complete(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.known_complete
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn abandoned_set(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.abandoned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The files of each completed checkpoint in an object store, relative to its directory.
    fn files(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Vec<String>>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Deletes checkpoint `epoch` as [`remove`](Self::remove) does, but when its files are
    /// known only its `_metadata` now: the rest joins `doomed` (paths relative to the root),
    /// for one bulk deletion.
    fn remove_into(&self, epoch: u64, doomed: &mut Vec<String>) {
        let Some(files) = self.files().remove(&epoch) else {
            return self.remove(epoch);
        };
        let chk = checkpoint_name(epoch);
        self.known_complete().remove(&epoch);
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&epoch);
        // As [`remove_checkpoint`]: without its `_metadata` first, nothing more.
        if self.root.delete(&join(&chk, METADATA_FILE)).is_ok() {
            doomed.extend(files.iter().map(|f| join(&chk, f)));
        }
    }

    /// Deletes checkpoint `epoch` (see [`remove_checkpoint`]) and what is cached about it.
    fn remove(&self, epoch: u64) {
        self.files().remove(&epoch);
        self.known_complete().remove(&epoch);
        self.abandoned_set().remove(&epoch);
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&epoch);
        remove_checkpoint(&self.root.child(&checkpoint_name(epoch)));
    }

    fn node_key(node: &StreamNode) -> String {
        operator_key(node.uid(), node.id())
    }

    /// Whether every subtask of every operator wrote its part, by what the checkpoint's
    /// directory holds (`written`, names relative to it).
    fn all_parts_written(graph: &StreamGraph, written: &BTreeSet<String>) -> bool {
        graph.nodes().iter().all(|n| {
            let key = Self::node_key(n);
            (0..n.parallelism() as usize)
                .all(|s| written.contains(&join(&key, &subtask_file(s, "ostate"))))
        })
    }

    /// Completes checkpoint `epoch` if every part is written: writes `_metadata`, then
    /// deletes completed checkpoints beyond the last `retained` and incomplete older ones.
    /// Returns the checkpoint's statistics when it completed it.
    pub(crate) fn complete(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        retained: usize,
    ) -> Result<Option<CheckpointStats>> {
        let chk = checkpoint_name(epoch);
        // One listing of the checkpoint's directory answers which parts are there (one
        // request on an object store, instead of one per part) and what they weigh.
        let listing = self.root.list(&chk)?;
        if listing.is_empty() {
            return Ok(None);
        }
        let mut written: BTreeSet<String> = listing.iter().map(|l| l.name.clone()).collect();
        self.fill_ended(graph, epoch, &mut written)?;
        if !Self::all_parts_written(graph, &written) {
            return Ok(None);
        }
        Metadata::of(graph, epoch).write_to(&self.root.child(&chk))?;
        self.known_complete().insert(epoch);
        self.parts().per_epoch.retain(|e, _| *e > epoch);
        // This checkpoint's own files are read back once more (statistics, committables);
        // older ones no more.
        self.own
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(e, _), _| *e >= epoch);
        let stats = self.stats(graph, epoch, &listing);
        if self.root.local_dir().is_none() {
            // Its files, so that retention deletes them without listing them again.
            let files = written.into_iter().collect();
            self.files().insert(epoch, files);
        }
        self.retain_newest(epoch, retained)?;
        Ok(Some(stats))
    }

    /// After checkpoint `epoch` completed: deletes completed checkpoints beyond the newest
    /// `retained`, incomplete older ones, and the shared objects only the deleted ones
    /// referred to. Each deleted checkpoint loses its `_metadata` first; the rest of its files
    /// and the shared objects go in one bulk request when its files are known (an object
    /// store: its listing at completion), else by listing its directory.
    fn retain_newest(&self, epoch: u64, retained: usize) -> Result<()> {
        let all = self.checkpoints()?;
        let completed = all.iter().filter(|(_, c)| *c).count();
        let mut to_drop = completed.saturating_sub(retained.max(1));
        let mut dropped_objects = BTreeSet::new();
        let mut doomed = Vec::new();
        for (e, complete) in &all {
            if *e >= epoch {
                continue;
            }
            if *complete && to_drop > 0 {
                to_drop -= 1;
                // A part that cannot be read keeps its objects (a leak, never a loss).
                dropped_objects.extend(self.shared_objects(*e).unwrap_or_default());
                self.remove_into(*e, &mut doomed);
            } else if !*complete {
                // Its uploads are referenced by nothing completed: collected before the
                // next run (a checkpoint in flight may share them until then).
                self.remove(*e);
            }
        }
        if !dropped_objects.is_empty() {
            // The checkpoints left: `all` but those removed above.
            let left = all
                .iter()
                .filter(|(e, c)| *c && self.known_complete().contains(e));
            let left: Vec<u64> = left.map(|(e, _)| *e).collect();
            if let Some(kept) = self.objects_of(&left) {
                let unreferenced = dropped_objects.difference(&kept);
                doomed.extend(unreferenced.map(|object| join(SHARED_DIR, object)));
            }
        }
        // A failed delete leaves files behind (collected before the next run).
        let _ = self.root.delete_many(&doomed);
        Ok(())
    }

    /// Deletes every shared object no completed checkpoint refers to (uploads of
    /// checkpoints that never completed, temporary files of interrupted uploads). Only
    /// while no checkpoint is in flight: before a run.
    fn collect_shared_objects(&self) -> Result<()> {
        let objects = self.root.list(SHARED_DIR)?;
        if objects.is_empty() {
            return Ok(());
        }
        let complete = self.checkpoints()?.into_iter().filter(|(_, c)| *c);
        let Some(kept) = self.objects_of(&complete.map(|(e, _)| e).collect::<Vec<_>>()) else {
            return Ok(());
        };
        for object in objects {
            if !kept.contains(&object.name) {
                let _ = self.root.delete(&join(SHARED_DIR, &object.name));
            }
        }
        if let Some(shared) = self.root.local_dir().map(|d| d.join(SHARED_DIR)) {
            // Empty operator folders, locally (an object store has no folders).
            for dir in self.root.list_dirs(SHARED_DIR)? {
                let _ = std::fs::remove_dir(shared.join(dir));
            }
        }
        Ok(())
    }

    /// The bytes of checkpoint `epoch` (in all and per operator) and the time from its first
    /// file to now, from `listing` (its directory's files, names relative to it).
    fn stats(
        &self,
        graph: &StreamGraph,
        epoch: u64,
        listing: &[crate::checkpoint::storage::Listed],
    ) -> CheckpointStats {
        let mut stats = CheckpointStats::default();
        let mut first: Option<std::time::SystemTime> = None;
        // The shared objects the incremental parts refer to, kept for retention (which
        // would otherwise read the same parts again); `None` once one cannot be read.
        let mut objects = Some(Vec::new());
        for n in graph.nodes() {
            let key = Self::node_key(n);
            let prefix = format!("{key}/");
            let mut bytes = 0;
            for file in listing.iter().filter(|f| f.name.starts_with(&prefix)) {
                if file.name.ends_with(".native") {
                    // What this checkpoint uploaded to the shared folder.
                    let rel = join(&checkpoint_name(epoch), &file.name);
                    let part = self
                        .read_file(epoch, &rel)
                        .and_then(|b| NativePart::decode(&shown(&self.root, &rel), &b));
                    match (&part, objects.as_mut()) {
                        (Ok(p), Some(o)) => o.extend(p.objects().map(|o| o.object.clone())),
                        _ => objects = None,
                    }
                    bytes += part.map_or(0, |p| p.uploaded_bytes);
                }
                bytes += file.bytes;
                if let Some(modified) = file.modified {
                    first = Some(first.map_or(modified, |f| f.min(modified)));
                }
            }
            stats.bytes += bytes;
            stats.operators.push((n.name().to_owned(), bytes));
        }
        stats.duration = first.and_then(|f| f.elapsed().ok()).unwrap_or_default();
        if let Some(objects) = objects {
            self.objects
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(epoch, objects);
        }
        stats
    }

    /// Whether every source subtask had stopped (for a stop-with-savepoint) in checkpoint
    /// `epoch`.
    pub(crate) fn sources_stopped(&self, graph: &StreamGraph, epoch: u64) -> Result<bool> {
        for n in graph.nodes().iter().filter(|n| graph.is_source(n.id())) {
            for s in 0..n.parallelism() as usize {
                let part = self.read_part(epoch, &Self::node_key(n), s)?;
                if !SourcePart::decode(&part.data)?.stopped {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Asks the job's coordinator, on whichever process it runs, for a savepoint into
    /// `target` (a path or a storage URL): a request file under `requests/` of the checkpoint
    /// directory, which every process of the job shares. The coordinator copies the first
    /// checkpoint that completes after it saw the request, then deletes it; the savepoint's
    /// `_metadata` says it is whole.
    pub(crate) fn request_savepoint(&self, target: &Path) -> Result<()> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("savepoint-{nanos}-{}", std::process::id());
        let target = target.to_str().ok_or_else(|| {
            Error::Config(format!(
                "a savepoint path that is not UTF-8: {}",
                target.display()
            ))
        })?;
        self.root.put(&join(REQUESTS_DIR, &name), target.as_bytes())
    }

    /// Asks the job to stop with a savepoint into `target`: the file `requests/stop` of the
    /// checkpoint directory, which a thread of every process of the job looks for (see
    /// [`crate::exec::signal`]). A second request before the first is answered changes
    /// nothing that matters: every process acts on the first target it read, and the
    /// coordinator writes the savepoint where its own process read.
    pub(crate) fn request_stop(&self, target: &Path) -> Result<()> {
        let target = target.to_str().ok_or_else(|| {
            Error::Config(format!(
                "a savepoint path that is not UTF-8: {}",
                target.display()
            ))
        })?;
        self.root
            .put(&join(REQUESTS_DIR, STOP_REQUEST), target.as_bytes())
    }

    /// The target of a stop with a savepoint asked for in the checkpoint directory, if any.
    pub(crate) fn stop_request(&self) -> Result<Option<std::path::PathBuf>> {
        let rel = join(REQUESTS_DIR, STOP_REQUEST);
        if !self.root.exists(&rel)? {
            return Ok(None);
        }
        let bytes = self.root.read(&rel)?;
        let target = String::from_utf8(bytes).map_err(|_| Error::Damaged {
            path: shown(&self.root, &rel).display().to_string(),
            what: "a stop request that is not UTF-8".into(),
        })?;
        Ok(Some(std::path::PathBuf::from(target)))
    }

    /// Removes an answered stop request (its savepoint is written), so that a job restored
    /// into the same checkpoint directory does not stop again.
    pub(crate) fn stop_answered(&self) -> Result<()> {
        let rel = join(REQUESTS_DIR, STOP_REQUEST);
        if self.root.exists(&rel)? {
            self.root.delete(&rel)?;
        }
        Ok(())
    }

    /// Asks every process of the job to cancel: the file `requests/cancel` of the checkpoint
    /// directory, holding the request's time (ms since the Unix epoch). A process acts on a
    /// request made after it started only, so a later run in the same directory is not
    /// cancelled by an old one.
    pub(crate) fn request_cancel(&self) -> Result<()> {
        let now = crate::job::unix_ms().to_string();
        self.root
            .put(&join(REQUESTS_DIR, CANCEL_REQUEST), now.as_bytes())
    }

    /// When a cancel was asked for in the checkpoint directory (ms since the Unix epoch).
    pub(crate) fn cancel_request(&self) -> Result<Option<u64>> {
        let rel = join(REQUESTS_DIR, CANCEL_REQUEST);
        if !self.root.exists(&rel)? {
            return Ok(None);
        }
        let bytes = self.root.read(&rel)?;
        let ms = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| Error::Damaged {
                path: shown(&self.root, &rel).display().to_string(),
                what: "a cancel request that is not a time".into(),
            })?;
        Ok(Some(ms))
    }

    /// The savepoint requests waiting in the checkpoint directory: (request, target).
    pub(crate) fn savepoint_requests(&self) -> Result<Vec<(String, std::path::PathBuf)>> {
        let mut out = Vec::new();
        for listed in self.root.list(REQUESTS_DIR)? {
            if listed.name == STOP_REQUEST || listed.name == CANCEL_REQUEST {
                continue;
            }
            let rel = join(REQUESTS_DIR, &listed.name);
            let bytes = self.root.read(&rel)?;
            let target = String::from_utf8(bytes).map_err(|_| Error::Damaged {
                path: shown(&self.root, &rel).display().to_string(),
                what: "a savepoint request that is not UTF-8".into(),
            })?;
            out.push((rel, std::path::PathBuf::from(target)));
        }
        Ok(out)
    }

    /// Removes an answered savepoint request.
    pub(crate) fn answered(&self, request: &str) -> Result<()> {
        self.root.delete(request)
    }

    /// Copies completed checkpoint `epoch` to `target` (a savepoint, a path or a storage
    /// URL).
    pub(crate) fn copy_to(&self, epoch: u64, target: &Path) -> Result<()> {
        copy_checkpoint(
            &self.root.child(&checkpoint_name(epoch)),
            &Storage::open(target)?,
        )
    }

    /// Before a run that starts at `start_epoch`: creates the directory and deletes the
    /// parts of checkpoints that never completed and every checkpoint at or after
    /// `start_epoch` (not part of this run's history), except `keep` (the one restored from).
    pub(crate) fn prepare_run(&self, start_epoch: u64, keep: Option<&Storage>) -> Result<()> {
        if let Some(dir) = self.root.local_dir() {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
            std::fs::read_dir(dir).map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?;
        }
        for (epoch, complete) in self.checkpoints()? {
            let chk = self.root.child(&checkpoint_name(epoch));
            if (epoch >= start_epoch || !complete) && keep.is_none_or(|k| !k.same_location(&chk)) {
                self.remove(epoch);
            }
        }
        self.collect_shared_objects()?;
        // The end of an earlier run: the marker first, so that no run can take the final
        // parts that are about to go for a finished job's.
        self.root.delete(FINISHED_FILE)?;
        for dir in [FINAL_DIR, ENDED_DIR] {
            self.root.delete_all(dir)?;
        }
        Ok(())
    }
}

/// The files one process wrote into checkpoints not yet completed, by epoch and path.
type OwnFiles = BTreeMap<(u64, String), std::sync::Arc<[u8]>>;

/// The parts one process wrote (see [`CheckpointStore::parts_written`]).
#[derive(Debug, Default)]
struct PartsWritten {
    /// Operator parts per epoch, for the checkpoints not yet completed.
    per_epoch: BTreeMap<u64, usize>,
    /// Final parts of subtasks that ended.
    ended: usize,
}

impl CheckpointStore {
    /// Every shared object the completed checkpoints `epochs` refer to; `None` when a part
    /// cannot be read (then nothing may be deleted).
    fn objects_of(&self, epochs: &[u64]) -> Option<BTreeSet<String>> {
        let mut kept = BTreeSet::new();
        for epoch in epochs {
            kept.extend(self.shared_objects(*epoch).ok()?);
        }
        Some(kept)
    }

    /// The shared objects the incremental parts of completed checkpoint `epoch` refer to.
    ///
    /// # Errors
    ///
    /// A part cannot be read (then nothing is deleted on its account).
    fn shared_objects(&self, epoch: u64) -> Result<Vec<String>> {
        let cached = self
            .objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&epoch)
            .cloned();
        if let Some(objects) = cached {
            return Ok(objects);
        }
        let chk = self.root.child(&checkpoint_name(epoch));
        let mut out = Vec::new();
        for file in chk.list("")? {
            if file.name.ends_with(".native") {
                let part = NativePart::decode(&shown(&chk, &file.name), &chk.read(&file.name)?)?;
                out.extend(part.objects().map(|o| o.object.clone()));
            }
        }
        self.objects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(epoch, out.clone());
        Ok(out)
    }
}

/// Where and how one subtask writes the keyed state of one checkpoint: a full file of the
/// savepoint format, or, for RocksDB in an incremental store, an incremental part.
pub(crate) struct KeyedPart<'a> {
    store: &'a CheckpointStore,
    full: String,
    native: String,
    /// Always a full file (the final state of an operator that ended, copied into later
    /// checkpoints, must not refer to shared objects that retention may delete).
    full_only: bool,
    key: String,
    epoch: u64,
    subtask: usize,
    /// The asynchronous halves of what [`write`](Self::write) wrote.
    deferred: std::cell::RefCell<Vec<Job>>,
}

impl KeyedPart<'_> {
    /// Writes `backend`'s keyed state: its synchronous half now (a native RocksDB checkpoint,
    /// or the state serialized), its uploads into [`take_deferred`](Self::take_deferred);
    /// `shared` is what the subtask uploaded before (kept up to date by incremental parts as
    /// their uploads succeed).
    pub(crate) fn write<K: typeinfo_state::StateKey>(
        &self,
        backend: &mut typeinfo_state::KeyedBackend<K>,
        shared: &std::sync::Arc<std::sync::Mutex<SharedFiles>>,
    ) -> Result<()> {
        use typeinfo_state::KeyedStateBackend;
        let job = match backend {
            typeinfo_state::KeyedBackend::RocksDb(b)
                if self.store.incremental && !self.full_only =>
            {
                let local = native_part::snapshot_native(b, &self.key, self.epoch)?;
                let (store, key, part) =
                    (self.store.clone(), self.key.clone(), self.native.clone());
                let (epoch, subtask, shared) = (self.epoch, self.subtask, shared.clone());
                Box::new(move || {
                    let root = &store.root;
                    let bytes = native_part::upload_native(
                        local, root, &key, epoch, subtask, &part, &shared,
                    )?;
                    store.remember(epoch, part, bytes);
                    Ok(())
                }) as Job
            }
            _ => self.store.write_deferred(self.full.clone(), |path| {
                backend
                    .snapshot(path)
                    .map(drop)
                    .map_err(|source| Error::State {
                        operator: self.key.clone(),
                        source,
                    })
            })?,
        };
        self.deferred.borrow_mut().push(job);
        Ok(())
    }

    /// The asynchronous halves of what was written, in order.
    pub(crate) fn take_deferred(&self) -> Vec<Job> {
        std::mem::take(&mut self.deferred.borrow_mut())
    }
}

/// Deletes a checkpoint directory, its `_metadata` first: a deletion cut short leaves an
/// incomplete checkpoint, never a complete-looking one with parts missing.
fn remove_checkpoint(chk: &Storage) {
    if chk.delete(METADATA_FILE).is_ok() {
        let _ = chk.delete_all("");
    }
}

/// What a completed checkpoint took.
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckpointStats {
    /// Bytes of every part.
    pub(crate) bytes: u64,
    /// From its first part on disk to its completion.
    pub(crate) duration: std::time::Duration,
    /// Bytes per operator (by name).
    pub(crate) operators: Vec<(String, u64)>,
}

/// What a source subtask writes into a checkpoint: whether it had stopped for a savepoint,
/// how many records it emitted, and its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourcePart {
    pub(crate) stopped: bool,
    pub(crate) emitted: u64,
    pub(crate) position: Vec<u8>,
}

impl SourcePart {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        out.write_bool(self.stopped);
        out.write_u64(self.emitted);
        out.write_len_prefixed(&self.position);
        out.into_inner()
    }

    pub(crate) fn decode(data: &[u8]) -> Result<Self> {
        let mut input = DataInputView::new(data);
        let corrupt = |e: typeinfo::Error| Error::Corrupt(format!("source position: {e}"));
        let stopped = input.read_bool().map_err(corrupt)?;
        let emitted = input.read_u64().map_err(corrupt)?;
        let position = input.read_len_prefixed().map_err(corrupt)?.to_vec();
        if !input.is_empty() {
            return Err(Error::Corrupt(
                "source position: bytes after the position".into(),
            ));
        }
        Ok(SourcePart {
            stopped,
            emitted,
            position,
        })
    }
}
