//! Where checkpoints and savepoints live: a directory on a local (or mounted) file system,
//! or a prefix in an object store (S3 and S3-compatible stores, Google Cloud Storage, Azure
//! Blob Storage), chosen by the location's form, as Flink's checkpoint directories are.
//!
//! | location | storage |
//! |---|---|
//! | `/var/checkpoints/job`, `relative/dir`, `file:///var/checkpoints/job` | local directory |
//! | `s3://bucket/prefix` (also `s3a://`) | Amazon S3 or an S3-compatible server |
//! | `gs://bucket/prefix` | Google Cloud Storage |
//! | `az://container/prefix`, `abfs://...` | Azure Blob Storage |
//! | `memory://name` | an in-memory store shared by the process (tests, demos) |
//!
//! Every API that takes a checkpoint directory or a savepoint path
//! ([`CheckpointConfig::new`](crate::config::CheckpointConfig::new), [`RestoreSettings`](crate::config::RestoreSettings),
//! stop-with-savepoint, triggered savepoints) takes either form. The object stores are
//! reached through Apache Arrow's `object_store` crate and configured from the environment,
//! as the vendors' own tools are: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ENDPOINT` (an S3-compatible server), `AWS_ALLOW_HTTP=true` (plain HTTP, for a server
//! on loopback); `GOOGLE_SERVICE_ACCOUNT`, ...; `AZURE_STORAGE_ACCOUNT_NAME`, ...; or
//! explicitly with [`Storage::open_with`]. One client per store is shared by the process.
//!
//! What each storage promises (the checkpoint code relies on nothing more):
//! - A write is whole or absent. Locally a file is written under a temporary name, synced,
//!   renamed, and its directory synced. An object store's put is atomic by itself, and a
//!   large file goes up as a multipart upload, which the store publishes only when it is
//!   completed, so a crash mid-upload leaves no object at all (an abandoned multipart
//!   upload holds no name; the store's lifecycle rules reclaim its parts).
//! - Reads return what was written or an error naming the location; every file of the
//!   checkpoint layout carries its own checksum and length, which its reader checks.
//! - Listing shows every completed write (S3, GCS and Azure list consistently).
//! - Deletion of what is not there is not an error.
//!
//! The checkpoint layout itself (which file marks what complete, what is deleted in which
//! order) lives in [`crate::checkpoint::format`], above this module.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use typeinfo_state::savepoint::write_atomically;

use crate::error::{Error, Result};

/// Files up to this size go up in one request; larger ones as a multipart upload in parts
/// of this size (S3's parts must be at least 5 MiB).
const PART_BYTES: usize = 8 << 20;
/// Parts of one multipart upload in flight at once.
const PARTS_IN_FLIGHT: usize = 4;
/// The block size of local copies and checksums.
const BLOCK: usize = 1 << 20;

/// A checkpoint storage location: a local directory or a prefix in an object store. Cheap to
/// clone (the object-store client is shared).
///
/// # Examples
///
/// ```
/// use typeinfo_runtime::storage::Storage;
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let storage = Storage::open(dir.path())?;
/// storage.put("chk-1/_metadata", b"...")?;
/// assert!(storage.exists("chk-1/_metadata")?);
/// assert_eq!(storage.list_dirs("")?, vec!["chk-1".to_string()]);
///
/// let memory = Storage::open("memory://docs".as_ref())?;
/// memory.put("a/b", b"bytes")?;
/// assert_eq!(memory.read("a/b")?, b"bytes");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Storage {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Local(PathBuf),
    Object {
        client: Arc<Client>,
        /// The prefix inside the store, without leading or trailing `/` (may be empty).
        prefix: String,
    },
}

/// One object store and the runtime its requests run on.
struct Client {
    store: Arc<dyn ObjectStore>,
    /// The store's root as a URL (`s3://bucket`), for messages and identity.
    base: String,
    runtime: tokio::runtime::Runtime,
}

impl Client {
    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({})", self.describe(""))
    }
}

/// One object (or file) of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its name relative to the listed location, `/`-separated.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// When it was written, where the storage says.
    pub modified: Option<SystemTime>,
}

/// The object-store clients of this process, by store root: one per store, shared.
fn clients() -> &'static Mutex<HashMap<String, Arc<Client>>> {
    static CLIENTS: OnceLock<Mutex<HashMap<String, Arc<Client>>>> = OnceLock::new();
    CLIENTS.get_or_init(Default::default)
}

/// The URL a location spells, if it is one (`scheme://...`); plain paths are not.
fn as_url(location: &str) -> Option<url::Url> {
    let (scheme, _) = location.split_once("://")?;
    let plain = scheme.len() >= 2
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !plain {
        return None;
    }
    url::Url::parse(location).ok()
}

fn config_error(location: &str, detail: impl std::fmt::Display) -> Error {
    Error::Config(format!("checkpoint storage `{location}`: {detail}"))
}

impl Storage {
    /// The storage `location` names (see the module docs): a local path or a `file://` URL,
    /// or an object store's URL, configured from the environment. Object-store clients are
    /// made once per store and process.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a URL of a scheme no storage serves, or one the object store's
    /// client refuses (a missing bucket name, a malformed option).
    pub fn open(location: &Path) -> Result<Self> {
        let text = location.to_string_lossy();
        match as_url(&text) {
            None => Ok(Storage::local(location)),
            Some(url) => Self::open_url(&text, &url, std::env::vars(), true),
        }
    }

    /// The storage at URL `location`, its client configured with `options` (the object
    /// store's keys: `aws_endpoint`, `aws_access_key_id`, `aws_allow_http`, `google_...`,
    /// `azure_...`, case-insensitive) instead of the environment. The client is this
    /// storage's own.
    ///
    /// # Errors
    ///
    /// As [`Storage::open`].
    pub fn open_with<K: AsRef<str>, V: Into<String>>(
        location: &str,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self> {
        match as_url(location) {
            None => Ok(Storage::local(location)),
            Some(url) => Self::open_url(location, &url, options, false),
        }
    }

    fn open_url<K: AsRef<str>, V: Into<String>>(
        location: &str,
        url: &url::Url,
        options: impl IntoIterator<Item = (K, V)>,
        shared: bool,
    ) -> Result<Self> {
        if url.scheme() == "file" {
            let path = url
                .to_file_path()
                .map_err(|()| config_error(location, "not a local file URL"))?;
            return Ok(Storage::local(path));
        }
        // `memory://<name>/...`: the store `name` of this process (object_store itself only
        // knows `memory:///`).
        let memory = url.scheme() == "memory";
        let scheme = if memory {
            object_store::ObjectStoreScheme::Memory
        } else {
            object_store::ObjectStoreScheme::parse(url)
                .map_err(|e| config_error(location, e))?
                .0
        };
        if matches!(
            scheme,
            object_store::ObjectStoreScheme::Local | object_store::ObjectStoreScheme::Http
        ) {
            return Err(config_error(
                location,
                "not a checkpoint storage (use a local path, s3://, gs://, az:// or memory://)",
            ));
        }
        let base = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
        let prefix = url.path().trim_matches('/').to_owned();
        let make = |options| -> Result<Arc<Client>> {
            let store: Box<dyn ObjectStore> = if memory {
                Box::new(object_store::memory::InMemory::new())
            } else {
                object_store::parse_url_opts(url, options)
                    .map_err(|e| config_error(location, e))?
                    .0
            };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| config_error(location, e))?;
            Ok(Arc::new(Client {
                store: Arc::from(store),
                base: base.clone(),
                runtime,
            }))
        };
        let client = if shared {
            let mut clients = clients().lock().unwrap_or_else(|p| p.into_inner());
            match clients.get(&base) {
                Some(c) => c.clone(),
                None => {
                    let c = make(options)?;
                    clients.insert(base.clone(), c.clone());
                    c
                }
            }
        } else {
            make(options)?
        };
        let storage = Storage {
            kind: Kind::Object { client, prefix },
        };
        // A prefix the store cannot name is refused here, not at the first checkpoint.
        storage.object_path("")?;
        Ok(storage)
    }

    /// The storage of the local directory `dir` (created when first written to).
    pub fn local(dir: impl Into<PathBuf>) -> Self {
        Storage {
            kind: Kind::Local(dir.into()),
        }
    }

    /// The local directory, for a local storage.
    pub fn local_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Local(dir) => Some(dir),
            Kind::Object { .. } => None,
        }
    }

    /// The storage at `rel` inside this one.
    pub fn child(&self, rel: &str) -> Storage {
        match &self.kind {
            Kind::Local(dir) => Storage::local(dir.join(rel)),
            Kind::Object { client, prefix } => Storage {
                kind: Kind::Object {
                    client: client.clone(),
                    prefix: join(prefix, rel),
                },
            },
        }
    }

    /// The storage one level up, if there is one.
    pub fn parent(&self) -> Option<Storage> {
        match &self.kind {
            Kind::Local(dir) => dir.parent().map(|p| {
                Storage::local(if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                })
            }),
            Kind::Object { client, prefix } if !prefix.is_empty() => Some(Storage {
                kind: Kind::Object {
                    client: client.clone(),
                    prefix: prefix.rsplit_once('/').map_or("", |(p, _)| p).to_owned(),
                },
            }),
            Kind::Object { .. } => None,
        }
    }

    /// The last component of the location's name (`chk-7` of `s3://b/job/chk-7`).
    pub fn name(&self) -> String {
        match &self.kind {
            Kind::Local(dir) => dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Kind::Object { prefix, .. } => prefix.rsplit('/').next().unwrap_or_default().to_owned(),
        }
    }

    /// `rel` inside this storage, as people read it: a path, or a URL.
    pub fn describe(&self, rel: &str) -> String {
        match &self.kind {
            Kind::Local(dir) if rel.is_empty() => dir.display().to_string(),
            Kind::Local(dir) => dir.join(rel).display().to_string(),
            Kind::Object { client, prefix } => {
                let inner = join(prefix, rel);
                if inner.is_empty() {
                    client.base.clone()
                } else {
                    format!("{}/{inner}", client.base)
                }
            }
        }
    }

    /// Whether both name the same location (local paths compared canonically).
    pub fn same_location(&self, other: &Storage) -> bool {
        match (&self.kind, &other.kind) {
            (Kind::Local(a), Kind::Local(b)) => match (fs::canonicalize(a), fs::canonicalize(b)) {
                (Ok(a), Ok(b)) => a == b,
                _ => a == b,
            },
            (Kind::Object { .. }, Kind::Object { .. }) => self.describe("") == other.describe(""),
            _ => false,
        }
    }

    fn object_path(&self, rel: &str) -> Result<ObjectPath> {
        match &self.kind {
            Kind::Object { prefix, .. } => {
                let full = join(prefix, rel);
                ObjectPath::parse(&full).map_err(|e| config_error(&self.describe(rel), e))
            }
            Kind::Local(_) => Err(Error::Config("not an object store".into())),
        }
    }

    fn object_error(&self, rel: &str, source: object_store::Error) -> Error {
        Error::Storage {
            location: self.describe(rel),
            source: Box::new(source),
        }
    }

    fn local_path(dir: &Path, rel: &str) -> PathBuf {
        if rel.is_empty() {
            dir.to_owned()
        } else {
            dir.join(rel)
        }
    }

    /// Writes `bytes` at `rel`, whole or not at all (see the module docs).
    ///
    /// # Errors
    ///
    /// The file system or the store fails, naming the location.
    pub fn put(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        match &self.kind {
            Kind::Local(dir) => {
                let path = Self::local_path(dir, rel);
                create_parent(&path)?;
                write_atomically(&path, bytes).map_err(|source| Error::State {
                    operator: String::new(),
                    source,
                })
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                client
                    .block_on(client.store.put(&at, PutPayload::from(bytes.to_vec())))
                    .map(drop)
                    .map_err(|e| self.object_error(rel, e))
            }
        }
    }

    /// Copies the local file `from` to `rel`, whole or not at all; returns the size and
    /// CRC-32 (IEEE) of what it copied.
    ///
    /// # Errors
    ///
    /// `from` cannot be read; the file system or the store fails.
    pub fn put_file(&self, rel: &str, from: &Path) -> Result<(u64, u32)> {
        match &self.kind {
            Kind::Local(dir) => {
                let to = Self::local_path(dir, rel);
                create_parent(&to)?;
                copy_atomically(from, &to)
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                let len = fs::metadata(from).map_err(|e| io(from, e))?.len();
                if len <= PART_BYTES as u64 {
                    let mut bytes = Vec::with_capacity(len as usize);
                    let copied = stream(from, |b| {
                        bytes.extend_from_slice(b);
                        Ok(())
                    })?;
                    fault_injection_delay();
                    client
                        .block_on(client.store.put(&at, PutPayload::from(bytes)))
                        .map_err(|e| self.object_error(rel, e))?;
                    return Ok(copied);
                }
                client.block_on(async {
                    let upload = client
                        .store
                        .put_multipart(&at)
                        .await
                        .map_err(|e| self.object_error(rel, e))?;
                    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
                    let mut file = fs::File::open(from).map_err(|e| io(from, e))?;
                    let mut hasher = crc32fast::Hasher::new();
                    let mut buf = vec![0u8; BLOCK];
                    let mut bytes = 0u64;
                    let read: Result<()> = async {
                        loop {
                            let n = file.read(&mut buf).map_err(|e| io(from, e))?;
                            if n == 0 {
                                return Ok(());
                            }
                            hasher.update(&buf[..n]);
                            bytes += n as u64;
                            writer
                                .wait_for_capacity(PARTS_IN_FLIGHT)
                                .await
                                .map_err(|e| self.object_error(rel, e))?;
                            writer.write(&buf[..n]);
                        }
                    }
                    .await;
                    if let Err(e) = read {
                        let _ = writer.abort().await;
                        return Err(e);
                    }
                    fault_injection_delay();
                    writer
                        .finish()
                        .await
                        .map_err(|e| self.object_error(rel, e))?;
                    Ok((bytes, hasher.finalize()))
                })
            }
        }
    }

    /// Writes the file at `rel` with `write`, which is handed the local path to write it to:
    /// the destination itself for a local storage (`write` must write it atomically, as the
    /// state crate's snapshot writers do), a scratch file uploaded afterwards for an object
    /// store.
    ///
    /// # Errors
    ///
    /// `write` fails, or the upload does.
    pub(crate) fn write_with(
        &self,
        rel: &str,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        match &self.kind {
            Kind::Local(dir) => {
                let path = Self::local_path(dir, rel);
                create_parent(&path)?;
                write(&path)
            }
            Kind::Object { .. } => {
                let scratch = scratch_dir()?;
                let file = scratch.path().join("file");
                write(&file)?;
                self.put_file(rel, &file).map(drop)
            }
        }
    }

    /// The bytes at `rel`.
    ///
    /// # Errors
    ///
    /// It is not there (an error naming it), or the file system or store fails.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>> {
        match &self.kind {
            Kind::Local(dir) => {
                let path = Self::local_path(dir, rel);
                fs::read(&path).map_err(|e| io(&path, e))
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                client
                    .block_on(async {
                        let got = client.store.get(&at).await?;
                        got.bytes().await
                    })
                    .map(|b| b.to_vec())
                    .map_err(|e| self.object_error(rel, e))
            }
        }
    }

    /// Whether a file (object) is at `rel`.
    ///
    /// # Errors
    ///
    /// The store cannot tell (a failed request): never taken for "absent".
    pub fn exists(&self, rel: &str) -> Result<bool> {
        match &self.kind {
            Kind::Local(dir) => Ok(Self::local_path(dir, rel).is_file()),
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                match client.block_on(client.store.head(&at)) {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(self.object_error(rel, e)),
                }
            }
        }
    }

    /// Whether anything is stored under `rel` (a non-empty directory, locally).
    ///
    /// # Errors
    ///
    /// The store cannot tell.
    pub fn has_any(&self, rel: &str) -> Result<bool> {
        match &self.kind {
            Kind::Local(dir) => Ok(fs::read_dir(Self::local_path(dir, rel))
                .map(|mut d| d.next().is_some())
                .unwrap_or(false)),
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                let first = client.block_on(async { client.store.list(Some(&at)).next().await });
                match first {
                    None => Ok(false),
                    Some(Ok(_)) => Ok(true),
                    Some(Err(e)) => Err(self.object_error(rel, e)),
                }
            }
        }
    }

    /// Every file under `rel`, at any depth, with names relative to `rel`; empty when
    /// nothing is there.
    ///
    /// # Errors
    ///
    /// The file system or the store fails.
    pub fn list(&self, rel: &str) -> Result<Vec<Listed>> {
        let mut out = match &self.kind {
            Kind::Local(dir) => {
                let mut out = Vec::new();
                walk(&Self::local_path(dir, rel), "", &mut out)?;
                out
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                let strip = at.as_ref().len() + usize::from(!at.as_ref().is_empty());
                let metas: Vec<object_store::ObjectMeta> = client
                    .block_on(client.store.list(Some(&at)).try_collect())
                    .map_err(|e| self.object_error(rel, e))?;
                metas
                    .into_iter()
                    .filter_map(|m| {
                        let name = m.location.as_ref().get(strip..)?.to_owned();
                        Some(Listed {
                            name,
                            bytes: m.size,
                            modified: Some(m.last_modified.into()),
                        })
                    })
                    .collect()
            }
        };
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The names of the directories (common prefixes) directly under `rel`, sorted; empty
    /// when nothing is there.
    ///
    /// # Errors
    ///
    /// The file system or the store fails.
    pub fn list_dirs(&self, rel: &str) -> Result<Vec<String>> {
        let mut out = match &self.kind {
            Kind::Local(dir) => {
                let path = Self::local_path(dir, rel);
                match fs::read_dir(&path) {
                    Ok(entries) => entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => return Err(io(&path, e)),
                }
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                let listed = client
                    .block_on(client.store.list_with_delimiter(Some(&at)))
                    .map_err(|e| self.object_error(rel, e))?;
                listed
                    .common_prefixes
                    .iter()
                    .filter_map(|p| p.filename().map(str::to_owned))
                    .collect()
            }
        };
        out.sort();
        Ok(out)
    }

    /// Deletes the file at `rel`; nothing there is not an error.
    ///
    /// # Errors
    ///
    /// The file system or the store fails.
    pub fn delete(&self, rel: &str) -> Result<()> {
        match &self.kind {
            Kind::Local(dir) => {
                let path = Self::local_path(dir, rel);
                missing_is_ok(fs::remove_file(&path), &path)
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                match client.block_on(client.store.delete(&at)) {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(self.object_error(rel, e)),
                }
            }
        }
    }

    /// Deletes the files at `rels` (in bulk requests on an object store: S3 takes up to 1,000
    /// names a request); a name with nothing there is not an error.
    ///
    /// # Errors
    ///
    /// The file system or the store fails.
    pub fn delete_many(&self, rels: &[String]) -> Result<()> {
        match &self.kind {
            Kind::Local(_) => rels.iter().try_for_each(|rel| self.delete(rel)),
            Kind::Object { client, .. } => {
                let paths = rels
                    .iter()
                    .map(|rel| self.object_path(rel))
                    .collect::<Result<Vec<_>>>()?;
                if paths.is_empty() {
                    return Ok(());
                }
                let store = client.store.clone();
                client.block_on(async {
                    let names = futures_util::stream::iter(paths.into_iter().map(Ok)).boxed();
                    let mut deleted = store.delete_stream(names);
                    while let Some(result) = deleted.next().await {
                        match result {
                            Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                            Err(e) => return Err(self.object_error("(bulk delete)", e)),
                        }
                    }
                    Ok(())
                })
            }
        }
    }

    /// Deletes everything under `rel`; nothing there is not an error.
    ///
    /// # Errors
    ///
    /// The file system or the store fails.
    pub fn delete_all(&self, rel: &str) -> Result<()> {
        match &self.kind {
            Kind::Local(dir) => {
                let path = Self::local_path(dir, rel);
                missing_is_ok(fs::remove_dir_all(&path), &path)
            }
            Kind::Object { client, .. } => {
                // One listing, then bulk deletes (S3 takes up to 1,000 names a request).
                let at = self.object_path(rel)?;
                let store = client.store.clone();
                client.block_on(async {
                    let names = store.list(Some(&at)).map_ok(|m| m.location).boxed();
                    let mut deleted = store.delete_stream(names);
                    while let Some(result) = deleted.next().await {
                        match result {
                            Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                            Err(e) => return Err(self.object_error(rel, e)),
                        }
                    }
                    Ok(())
                })
            }
        }
    }

    /// Brings the file at `rel` to the local path `to`: a hard link (or a copy across file
    /// systems) for a local storage, a download for an object store.
    ///
    /// # Errors
    ///
    /// It is not there, or the file system or the store fails.
    pub fn fetch(&self, rel: &str, to: &Path) -> Result<()> {
        create_parent(to)?;
        match &self.kind {
            Kind::Local(dir) => {
                let from = Self::local_path(dir, rel);
                if fs::hard_link(&from, to).is_err() {
                    fs::copy(&from, to).map_err(|e| io(&from, e))?;
                }
                Ok(())
            }
            Kind::Object { client, .. } => {
                let at = self.object_path(rel)?;
                let mut file = fs::File::create(to).map_err(|e| io(to, e))?;
                client.block_on(async {
                    let got = client
                        .store
                        .get(&at)
                        .await
                        .map_err(|e| self.object_error(rel, e))?;
                    let mut body = got.into_stream();
                    while let Some(chunk) = body.next().await {
                        let chunk = chunk.map_err(|e| self.object_error(rel, e))?;
                        file.write_all(&chunk).map_err(|e| io(to, e))?;
                    }
                    Ok(())
                })
            }
        }
    }

    /// A local path holding the file at `rel`: the file itself for a local storage, a
    /// download into `scratch` for an object store.
    ///
    /// # Errors
    ///
    /// As [`Storage::fetch`].
    pub(crate) fn local_copy(&self, rel: &str, scratch: &Path) -> Result<PathBuf> {
        match &self.kind {
            Kind::Local(dir) => Ok(Self::local_path(dir, rel)),
            Kind::Object { .. } => {
                let to = scratch.join(rel);
                self.fetch(rel, &to)?;
                Ok(to)
            }
        }
    }
}

/// `a/b` from `a` and `b`, either possibly empty.
pub(crate) fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a}/{b}"),
    }
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// A deletion of what is not there is not an error.
fn missing_is_ok(result: std::io::Result<()>, path: &Path) -> Result<()> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path, e)),
        _ => Ok(()),
    }
}

fn create_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => fs::create_dir_all(dir).map_err(|e| io(dir, e)),
        _ => Ok(()),
    }
}

/// A scratch directory for files on their way to or from an object store.
pub(crate) fn scratch_dir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(".typeinfo-storage-")
        .tempdir()
        .map_err(|e| io(&std::env::temp_dir(), e))
}

/// Fault injection: a crash then often lands while an upload is in flight.
fn fault_injection_delay() {
    if let Some(delay) = crate::config::checkpoint_write_delay() {
        std::thread::sleep(delay);
    }
}

/// Every file under `dir` (names relative to it, `/`-separated, after `prefix`).
fn walk(dir: &Path, prefix: &str, out: &mut Vec<Listed>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io(dir, e))?;
        let name = join(prefix, &entry.file_name().to_string_lossy());
        let Ok(meta) = entry.metadata() else {
            continue; // deleted meanwhile
        };
        if meta.is_dir() {
            walk(&entry.path(), &name, out)?;
        } else {
            out.push(Listed {
                name,
                bytes: meta.len(),
                modified: meta.modified().ok(),
            });
        }
    }
    Ok(())
}

/// Reads the file at `path` in blocks, handing each to `sink`; returns its size and CRC-32.
pub(crate) fn stream(path: &Path, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<(u64, u32)> {
    let mut file = fs::File::open(path).map_err(|e| io(path, e))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; BLOCK];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        sink(&buf[..n])?;
        bytes += n as u64;
    }
    Ok((bytes, hasher.finalize()))
}

/// Copies `from` to `to` under a temporary name, synced, then renamed (and the directory
/// synced); returns the size and CRC-32 of what it copied.
fn copy_atomically(from: &Path, to: &Path) -> Result<(u64, u32)> {
    let dir = to.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        to.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let result = (|| {
        let mut output = fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
        let copied = stream(from, |block| {
            output.write_all(block).map_err(|e| io(&tmp, e))
        })?;
        output.sync_all().map_err(|e| io(&tmp, e))?;
        fault_injection_delay();
        fs::rename(&tmp, to).map_err(|e| io(to, e))?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(copied)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(s: &Storage) {
        assert!(!s.exists("chk-1/_metadata").unwrap());
        assert!(s.list("").unwrap().is_empty());
        assert!(s.list_dirs("").unwrap().is_empty());
        s.put("chk-1/op/subtask-0.ostate", b"part").unwrap();
        s.put("chk-1/_metadata", b"meta").unwrap();
        s.put("chk-10/_metadata", b"meta10").unwrap();
        assert!(s.exists("chk-1/_metadata").unwrap());
        assert!(!s.exists("chk-1/op").unwrap(), "a directory is not a file");
        assert!(s.has_any("chk-1/op").unwrap());
        assert!(!s.has_any("chk-2").unwrap());
        assert_eq!(s.read("chk-1/_metadata").unwrap(), b"meta");
        assert!(s.read("chk-2/_metadata").is_err());
        assert_eq!(s.list_dirs("").unwrap(), vec!["chk-1", "chk-10"]);
        let names: Vec<String> = s
            .list("chk-1")
            .unwrap()
            .into_iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(names, vec!["_metadata", "op/subtask-0.ostate"]);
        // A large file goes up in parts and comes back whole.
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        let bytes: Vec<u8> = (0..(PART_BYTES * 2 + 12_345))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        fs::write(&big, &bytes).unwrap();
        let (len, crc) = s.put_file("shared/op/big", &big).unwrap();
        assert_eq!((len, crc), (bytes.len() as u64, crc32fast::hash(&bytes)));
        let back = dir.path().join("back");
        s.fetch("shared/op/big", &back).unwrap();
        assert_eq!(fs::read(&back).unwrap(), bytes);
        let child = s.child("chk-1");
        assert_eq!(child.read("_metadata").unwrap(), b"meta");
        assert_eq!(child.name(), "chk-1");
        assert!(child.parent().unwrap().same_location(s));
        s.delete_all("chk-1").unwrap();
        s.delete("chk-10/_metadata").unwrap();
        s.delete("chk-10/_metadata").unwrap(); // not there: not an error
        s.delete_all("chk-10").unwrap();
        s.delete_all("chk-11").unwrap(); // not there: not an error
        assert_eq!(s.list_dirs("").unwrap(), vec!["shared"]);
        assert!(s.exists("shared/op/big").unwrap());
    }

    #[test]
    fn a_local_directory_keeps_the_storage_promises() {
        let dir = tempfile::tempdir().unwrap();
        exercise(&Storage::open(&dir.path().join("job")).unwrap());
        let url = format!("file://{}", dir.path().join("other").display());
        let s = Storage::open(url.as_ref()).unwrap();
        assert_eq!(s.local_dir(), Some(dir.path().join("other").as_path()));
    }

    #[test]
    fn an_in_memory_object_store_keeps_the_storage_promises() {
        exercise(&Storage::open("memory://unit-test/job".as_ref()).unwrap());
    }

    #[test]
    fn locations_are_told_apart_and_bad_urls_refused() {
        assert!(Storage::open("relative/dir".as_ref())
            .unwrap()
            .local_dir()
            .is_some());
        assert!(Storage::open("weird:name".as_ref())
            .unwrap()
            .local_dir()
            .is_some());
        let e = Storage::open("ftp://host/dir".as_ref()).unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{e}");
        let e = Storage::open("https://host/dir".as_ref()).unwrap_err();
        assert!(e.to_string().contains("not a checkpoint storage"), "{e}");
        let s = Storage::open_with("s3://bucket/a/b", [("aws_region", "us-east-1")]).unwrap();
        assert_eq!(
            s.describe("chk-1/_metadata"),
            "s3://bucket/a/b/chk-1/_metadata"
        );
        assert_eq!(s.parent().unwrap().describe(""), "s3://bucket/a");
        assert!(s.local_dir().is_none());
    }
}
