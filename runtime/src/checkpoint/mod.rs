//! Checkpoints, savepoints and restore.
//!
//! A job's timely timestamps carry checkpoint epochs (and, below them, the flow-control
//! ticks of [`crate::exec::source_driver`]). Every `interval`, each source subtask records its
//! position and moves on to the next epoch. Operators process their input one
//! epoch at a time (records of a later epoch that arrive early wait, which is the alignment
//! of Flink's aligned checkpoints); when an operator's input frontier passes epoch `e`, it
//! has seen everything before the cut and writes its part of checkpoint `e`: keyed state
//! through the state crate's savepoint format (one file per subtask, for either backend),
//! and a small file of operator-local state (watermark, source position, the operator's
//! own bytes). Each part is written under a temporary name, synced and renamed.
//!
//! Checkpoints are asynchronous ([`upload`]): at the cut a subtask takes only the synchronous
//! half (a native RocksDB checkpoint of hard links, or its heap state serialized, and its
//! operator part in memory) and goes on with its records, while a thread of its own writes
//! and uploads the part, the operator part last; a failed write fails that checkpoint (it
//! never completes), not the job, up to [`CheckpointConfig::tolerable_failures`] in a row.
//! A coordinator watches every operator's progress on a thread of its own on process 0;
//! once every subtask has moved past `e` and every part of `e` is written, it writes the
//! checkpoint's `_metadata` (the completion marker), publishes the file sinks' output up to
//! `e`, and deletes checkpoints older than the last `retained` ones.
//!
//! In a job of one process, checkpoints are taken one at a time, as Flink's default
//! `maxConcurrentCheckpoints` of 1 does: a source closes its next epoch on its interval only
//! once the checkpoint before it is settled (completed; a part failed to write, which the
//! subtask reports and counts against the tolerable failures; or 10 minutes passed, Flink's
//! default `checkpointTimeout`, said on stderr). With an interval shorter than a checkpoint
//! takes, checkpoints follow each other back to back and none is written only to be
//! superseded. The coordinator knows there when every part is written (each subtask's
//! operator part is counted as its lane writes it) and lists the checkpoint's directory then,
//! once (or after a second, for parts it cannot count), and reads the parts it needs
//! (committables, incremental parts) from memory; in an object store, retention deletes a
//! checkpoint's files (known from its completion) and the shared objects only it referred to
//! in one bulk request after its `_metadata`. So a checkpoint costs an object store about one
//! request per part and SST file plus four (a listing of the checkpoint and of the root,
//! `_metadata`, the deletions). In a job of several processes the sources cannot see the
//! coordinator's completions: each closes epochs on its interval, the coordinator lists a
//! waiting checkpoint every 25 ms, and a newer checkpoint supersedes one still waiting.
//!
//! A savepoint is a completed checkpoint copied to a directory of the user's choosing, never
//! deleted by the job. Both are in one format, independent of the state backend, so a job
//! restores from either into either backend, at another parallelism (keyed state moves by
//! key group; operator-local state takes the minimum watermark of the old subtasks), and
//! with evolved types (migrated on restore; the job result lists what was migrated).
//!
//! Layout of a checkpoint directory (`<dir>/chk-<epoch>/`):
//!
//! ```text
//! _metadata                       completion marker (text; see `Metadata`)
//! <operator>/subtask-<i>.ostate   operator-local state of subtask i
//! <operator>/subtask-<i>.kstate   keyed state of subtask i (state/FORMAT.md)
//! <operator>/subtask-<i>.opstate  operator state of subtask i (state/FORMAT.md, `TIOS`)
//! <operator>/subtask-<i>.native   keyed state of subtask i, incremental (RocksDB; FORMAT.md)
//! ```
//!
//! With RocksDB state, checkpoints are incremental by default
//! ([`CheckpointConfig::incremental`]): a subtask's keyed state is a native RocksDB
//! checkpoint whose SST files are uploaded once into `<dir>/shared/<operator>/` and referred
//! to by every later checkpoint that still holds them, with reference counting at retention
//! (see [`crate::native_part`]'s docs for the layout, the naming and why deletion is safe). A
//! savepoint is always written in the backend-independent format: copying a checkpoint into
//! a savepoint converts its incremental parts.
//!
//! `<operator>` is `uid-<uid>` for operators with a uid and `node-<id>` otherwise (set uids
//! on stateful operators of jobs that will change).
//!
//! The directory may be local or a prefix in an object store (`s3://bucket/prefix`, ...):
//! the store reads and writes it through [`crate::storage::Storage`], whose promises (a write
//! is whole or absent, listing shows every completed write) are all the rules above need. A
//! subtask restoring from an object store downloads its operator's files (every old
//! subtask's: the state crate keeps the key groups the subtask owns) into a scratch
//! directory that is removed after the restore.
//!
//! A source subtask whose input ends (its splits are read, while other subtasks still run)
//! takes no part in later epochs, yet every later checkpoint needs its part: when it ends it
//! writes its last part (its end position) for the current epoch and to
//! `<dir>/ended/<operator>/subtask-<i>.ostate`, and the coordinator copies that file into
//! each later checkpoint before completing it, so that checkpoints keep completing (and
//! sinks keep publishing) while the other subtasks run, as Flink does for finished tasks.
//!
//! The end of a job (every input exhausted, no stop-with-savepoint) is a step of its own, so
//! that a two-phase sink publishes its output after the last checkpoint exactly once. When
//! its input ends, each sink subtask prepares what it has not committed yet (everything
//! since the last completed checkpoint, and the records after the last cut) and writes it
//! as its *final part*, `<dir>/final/<operator>/subtask-<i>.ostate`, without committing
//! anything. Once every operator has ended, the coordinator writes `<dir>/_finished`
//! (atomically), then commits the final parts. A process killed before `_finished` exists
//! restores from the last completed checkpoint, whose restore aborts the staged output (the
//! sink's `recover`) and replays; one killed after it finds `_finished` when restored from
//! the directory, commits the final parts again (commits are idempotent) and ends at once:
//! the job had finished. A run that does not restore from the directory removes both.

pub(crate) mod format;
pub mod native_part;
pub(crate) mod restore;
pub mod storage;
pub(crate) mod store;
pub(crate) mod upload;

pub use crate::config::{CheckpointConfig, RestoreSettings};
pub use format::{
    kstate_path, native_path, operator_key, opstate_path, ostate_path, Metadata, OperatorPart,
    TimerState, TimerStateValue, METADATA_FILE,
};
pub use restore::locate;
