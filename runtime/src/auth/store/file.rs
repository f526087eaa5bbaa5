//! [`FileStore`]: registrations and tokens in one JSON file, shared safely by every process of
//! the user that opens it.
//!
//! - A change takes an exclusive advisory lock (`flock`, on a lock file beside the store:
//!   `<store>.lock`, never removed), re-reads the file under it, applies only its own change
//!   (the one key it sets or removes) to what is on disk, and writes the result: the last
//!   writer of a key wins and every other key is kept, whoever wrote it.
//! - The result goes to a temporary file of a random name in the same directory, created
//!   exclusively (`O_CREAT | O_EXCL`, and `O_NOFOLLOW` on unix: a planted file or symlink is
//!   never opened), `0600`, synced, then renamed over the store.
//! - A read sees what other processes wrote (a login, a refreshed token): it reads the file
//!   again whenever its stamp (size, times, inode) is not the one last read, or was too
//!   recent then to tell a later change by; otherwise it answers from the last read (a
//!   `stat`, far cheaper than reading and parsing the file again). No lock is needed to read:
//!   the file is only ever replaced whole, by a rename.
//! - Directories the store creates are `0700`. An existing directory is left as it is (it
//!   may be a home or a shared directory the user chose); when others may write in it (group
//!   or other write permission, no sticky bit), a warning is logged once, since they could
//!   replace the file.
//! - A file that is not valid JSON, larger than [`MAX_FILE`], or not a regular file reads as
//!   empty (a warning, without its contents) and is replaced at the next change; one that
//!   cannot be read (permissions, I/O) reads as empty but is never written over. A change
//!   that cannot be written is logged and kept in this process's memory, over what the file
//!   says, until a later write succeeds.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{ClientCredentials, Contents, Token, TokenStore};

/// The largest store file read or written: a larger one is treated as corrupt.
pub const MAX_FILE: u64 = 4 * 1024 * 1024;
/// How long a change waits for another process's lock before giving up (and keeping the
/// change in memory).
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// How many random temporary names are tried before a write gives up.
const TEMP_TRIES: usize = 16;

/// A store in one JSON file, readable and writable by its owner only, that several processes
/// may share (see the [module](self) for the locking, the merge and the temporary file). Not
/// a cache of the file: every read checks whether the file changed.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    lock_path: PathBuf,
    /// Changes not written yet (a write failed): applied over what the file says.
    unsaved: Mutex<Unsaved>,
    /// The file as last read, and what it looked like then.
    cache: Mutex<Option<Cached>>,
    warned_dir: AtomicBool,
    warned_read: AtomicBool,
}

impl FileStore {
    /// The store in `path` (created on the first change, with its directory). Reads nothing
    /// yet.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        FileStore {
            path,
            lock_path: PathBuf::from(lock_path),
            unsaved: Mutex::new(Unsaved::default()),
            cache: Mutex::new(None),
            warned_dir: AtomicBool::new(false),
            warned_read: AtomicBool::new(false),
        }
    }

    /// Where the store is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn unsaved(&self) -> std::sync::MutexGuard<'_, Unsaved> {
        self.unsaved.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `edit` and writes it (with any change not written before) into the file.
    fn change(&self, edit: Edit) {
        let mut unsaved = self.unsaved();
        unsaved.record(edit);
        match self.persist(&unsaved) {
            Ok(()) => *unsaved = Unsaved::default(),
            Err(e) => {
                tracing::warn!(target: "mcp::auth", path = %self.path.display(), error = %e,
                    "could not write the token store; the change is kept in memory");
            }
        }
    }

    /// Under the lock: what is on disk, with `unsaved` applied, written back.
    fn persist(&self, unsaved: &Unsaved) -> io::Result<()> {
        self.prepare_dir()?;
        let _lock = lock(&self.lock_path)?;
        let mut contents = match read(&self.path) {
            Ok(contents) => contents,
            Err(ReadError::Missing) => Contents::default(),
            Err(ReadError::Corrupt(why)) => {
                tracing::warn!(target: "mcp::auth", path = %self.path.display(),
                    "the token store is {why}; replacing it");
                Contents::default()
            }
            // Unreadable is not empty: never write over what could not be read.
            Err(ReadError::Io(e)) => return Err(e),
        };
        unsaved.apply(&mut contents);
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
        write(&self.path, &contents)
        // The lock is released when `_lock` is closed, after the rename.
    }

    /// Creates the store's directory (`0700`), or warns once when an existing one lets others
    /// replace the file.
    fn prepare_dir(&self) -> io::Result<()> {
        let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) else {
            return Ok(());
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            let mode = std::fs::metadata(dir)?.permissions().mode();
            let others_write = mode & 0o022 != 0 && mode & 0o1000 == 0;
            if others_write && !self.warned_dir.swap(true, Ordering::Relaxed) {
                tracing::warn!(target: "mcp::auth", dir = %dir.display(),
                    mode = format_args!("{:o}", mode & 0o7777),
                    "others may write in the token store's directory (and replace the store)");
            }
        }
        #[cfg(not(unix))]
        std::fs::create_dir_all(dir)?;
        Ok(())
    }

    /// What the file holds now, with this process's unwritten changes over it.
    fn get<T>(&self, f: impl FnOnce(&Contents) -> T) -> T {
        // The locks in `change`'s order: `unsaved`, then `cache`.
        let unsaved = self.unsaved();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let hit = cache.as_ref().is_some_and(|c| {
            c.settled && std::fs::metadata(&self.path).is_ok_and(|m| Stamp::of(&m) == Some(c.stamp))
        });
        if !hit {
            *cache = None;
            let read_at = SystemTime::now();
            match read_stamped(&self.path) {
                Ok((contents, stamp)) => {
                    self.warned_read.store(false, Ordering::Relaxed);
                    *cache = Some(Cached {
                        settled: stamp.settled(read_at),
                        stamp,
                        contents,
                    });
                }
                Err(ReadError::Missing) => {}
                Err(e) => {
                    if !self.warned_read.swap(true, Ordering::Relaxed) {
                        tracing::warn!(target: "mcp::auth", path = %self.path.display(),
                            "could not read the token store ({e}); reading it as empty");
                    }
                }
            }
        }
        let on_disk = cache.as_ref().map(|c| &c.contents);
        if unsaved.is_empty() {
            return match on_disk {
                Some(contents) => f(contents),
                None => f(&Contents::default()),
            };
        }
        let mut contents = on_disk.cloned().unwrap_or_default();
        unsaved.apply(&mut contents);
        f(&contents)
    }
}

impl TokenStore for FileStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        self.get(|c| c.clients.get(issuer).cloned())
    }
    fn set_client(&self, credentials: ClientCredentials) {
        self.change(Edit::SetClient(credentials));
    }
    fn token(&self, resource: &str) -> Option<Token> {
        self.get(|c| c.tokens.get(resource).cloned())
    }
    fn set_token(&self, resource: &str, token: Token) {
        self.change(Edit::SetToken(resource.to_owned(), token));
    }
    fn remove_token(&self, resource: &str) {
        self.change(Edit::RemoveToken(resource.to_owned()));
    }
}

/// One change of one key.
#[derive(Debug)]
enum Edit {
    SetClient(ClientCredentials),
    SetToken(String, Token),
    RemoveToken(String),
}

/// The changes of this process not written yet, the latest per key (so at most one per key).
#[derive(Debug, Default)]
struct Unsaved {
    clients: BTreeMap<String, ClientCredentials>,
    /// `None`: removed.
    tokens: BTreeMap<String, Option<Token>>,
}

impl Unsaved {
    fn is_empty(&self) -> bool {
        self.clients.is_empty() && self.tokens.is_empty()
    }

    fn record(&mut self, edit: Edit) {
        match edit {
            Edit::SetClient(c) => {
                self.clients.insert(c.issuer.clone(), c);
            }
            Edit::SetToken(key, t) => {
                self.tokens.insert(key, Some(t));
            }
            Edit::RemoveToken(key) => {
                self.tokens.insert(key, None);
            }
        }
    }

    fn apply(&self, contents: &mut Contents) {
        for (issuer, c) in &self.clients {
            contents.clients.insert(issuer.clone(), c.clone());
        }
        for (key, t) in &self.tokens {
            match t {
                Some(t) => contents.tokens.insert(key.clone(), t.clone()),
                None => contents.tokens.remove(key),
            };
        }
    }
}

/// Why the store could not be read.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// There is no file (an empty store).
    #[error("missing")]
    Missing,
    /// The file is not a store (a short reason, never its contents).
    #[error("{0}")]
    Corrupt(&'static str),
    /// The file could not be read.
    #[error("{0}")]
    Io(#[source] io::Error),
}

/// The store in `path`: at most [`MAX_FILE`] bytes of a regular file (a FIFO or a device
/// planted there is never read from, nor waited on).
fn read(path: &Path) -> Result<Contents, ReadError> {
    read_stamped(path).map(|(contents, _)| contents)
}

/// [`read`], with the stamp of the file read.
fn read_stamped(path: &Path) -> Result<(Contents, Stamp), ReadError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading would wait for a writer.
        options.custom_flags(nix::libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Io(e)),
    };
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::Corrupt("not a regular file"));
    }
    if meta.len() > MAX_FILE {
        return Err(ReadError::Corrupt("larger than 4 MiB"));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(ReadError::Corrupt("larger than 4 MiB"));
    }
    let contents =
        serde_json::from_slice(&bytes).map_err(|e| ReadError::Corrupt(json_error_kind(&e)))?;
    let stamp = Stamp::of(&meta).ok_or(ReadError::Corrupt("without a modification time"))?;
    Ok((contents, stamp))
}

/// The file as last read by [`FileStore::get`].
#[derive(Debug)]
struct Cached {
    stamp: Stamp,
    /// Whether the stamp was old enough, when the file was read, to tell any later change
    /// (see [`Stamp::settled`]): if not, the file is read again next time.
    settled: bool,
    contents: Contents,
}

/// What tells one version of the store file from another without reading it: its size, its
/// times, and on unix its device, inode and change time (which no one can set back). A file
/// replaced by a rename has a new change time, unless it was replaced within the
/// timestamps' granularity of the one it replaces: hence [`Stamp::settled`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: SystemTime,
    #[cfg(unix)]
    dev: u64,
    #[cfg(unix)]
    ino: u64,
    #[cfg(unix)]
    ctime: (i64, i64),
}

impl Stamp {
    /// How old a file's times must be, when it is read, for a stamp to be trusted: far more
    /// than the file systems' timestamp granularity (from nanoseconds to 2 s for FAT).
    const SETTLE: Duration = Duration::from_secs(3);

    fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok()?,
            #[cfg(unix)]
            dev: meta.dev(),
            #[cfg(unix)]
            ino: meta.ino(),
            #[cfg(unix)]
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// Whether a file of this stamp, read at `read_at`, can be told from any later version by
    /// its stamp alone: its times are more than [`Stamp::SETTLE`] before `read_at`, so a
    /// version written after the read has later ones.
    fn settled(&self, read_at: SystemTime) -> bool {
        let old = |t: SystemTime| t + Self::SETTLE < read_at;
        #[cfg(unix)]
        let changed = {
            let (secs, nanos) = self.ctime;
            u64::try_from(secs).is_ok_and(|secs| {
                old(UNIX_EPOCH + Duration::new(secs, u32::try_from(nanos).unwrap_or(0)))
            })
        };
        #[cfg(not(unix))]
        let changed = true;
        changed && old(self.modified)
    }
}

/// The lock file at `path` (created `0600`, never through a symlink), locked exclusively:
/// unlocked when the returned file is closed. Waits at most [`LOCK_WAIT`].
fn lock(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(
            "the token store's lock is not a regular file",
        ));
    }
    let deadline = Instant::now() + LOCK_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the token store stayed locked by another process for {} s",
                    LOCK_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Writes `contents` to a new temporary file beside `path` and renames it over `path`.
fn write(path: &Path, contents: &Contents) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(contents).map_err(io::Error::other)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(io::Error::other(
            "the token store would be larger than 4 MiB",
        ));
    }
    let (mut file, mut tmp) = create_temp(path)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp.path, path)?;
    tmp.renamed = true;
    // The rename itself, durable (best effort: not every system can sync a directory).
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// A temporary file, removed when dropped unless it was renamed.
struct Temp {
    path: PathBuf,
    renamed: bool,
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A new file beside `path`, of a random name (`.<name>.<16 hex digits>.tmp`), created
/// exclusively (`O_EXCL`; `O_NOFOLLOW` on unix) with mode `0600`.
fn create_temp(path: &Path) -> io::Result<(File, Temp)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("the token store's path has no file name"))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut last = None;
    for _ in 0..TEMP_TRIES {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{:016x}.tmp", random()));
        let tmp = dir.join(tmp_name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600).custom_flags(nix::libc::O_NOFOLLOW);
        }
        match options.open(&tmp) {
            Ok(file) => {
                let tmp = Temp {
                    path: tmp,
                    renamed: false,
                };
                return Ok((file, tmp));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary file")))
}

/// 64 bits another process cannot predict: std's per-process random hash keys (from the
/// system's entropy) over a counter and the time. Not a secret, only a name that cannot be
/// planted in advance (`O_EXCL` is what makes a planted one harmless).
fn random() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(fastrand::u64(..));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}

/// A short name for a JSON error's kind, without the input it quotes.
fn json_error_kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "not valid JSON (an I/O error)",
        serde_json::error::Category::Syntax => "not valid JSON (a syntax error)",
        serde_json::error::Category::Data => "not a token store (unexpected data)",
        serde_json::error::Category::Eof => "not valid JSON (cut short)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::Secret;

    /// A fresh directory for one test (removed when dropped).
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir().join(format!(
                "mcp-store-{name}-{}-{:x}",
                std::process::id(),
                random()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn token(access: &str, refresh: &str) -> Token {
        Token {
            issuer: "https://as.example".into(),
            resource: Some("https://mcp.example/mcp".into()),
            access_token: Secret::new(access),
            refresh_token: Some(Secret::new(refresh)),
            expires_at: Some(1_000),
            scopes: vec!["a".into()],
        }
    }

    fn client(issuer: &str, id: &str) -> ClientCredentials {
        ClientCredentials {
            issuer: issuer.into(),
            client_id: id.into(),
            client_secret: Some(Secret::new("s1")),
            token_endpoint_auth_method: None,
        }
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn a_file_store_is_owner_only_and_survives_a_reopen() {
        let dir = Dir::new("reopen");
        let path = dir.0.join("sub").join("deeper").join("tokens.json");
        let store = FileStore::open(&path);
        assert_eq!(store.token("r"), None);
        store.set_client(client("https://as.example", "c1"));
        store.set_token("r", token("at-1", "rt-1"));
        #[cfg(unix)]
        {
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&store.lock_path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
            assert_eq!(mode(path.parent().unwrap().parent().unwrap()), 0o700);
        }
        let again = FileStore::open(&path);
        assert_eq!(again.token("r"), Some(token("at-1", "rt-1")));
        assert_eq!(again.client("https://as.example").unwrap().client_id, "c1");
        again.remove_token("r");
        assert_eq!(FileStore::open(&path).token("r"), None);
        assert_eq!(store.token("r"), None, "the first store sees the removal");
        // Nothing left behind but the store and its lock.
        let mut names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["tokens.json", "tokens.json.lock"]);
    }

    #[cfg(unix)]
    #[test]
    fn an_existing_wider_directory_is_left_as_it_is() {
        use std::os::unix::fs::PermissionsExt;
        let dir = Dir::new("wide");
        let shared = dir.0.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o775)).unwrap();
        let store = FileStore::open(shared.join("tokens.json"));
        store.set_token("r", token("at-1", "rt-1"));
        assert_eq!(mode(&shared), 0o775);
        assert!(store.warned_dir.load(Ordering::Relaxed));
        assert_eq!(mode(&shared.join("tokens.json")), 0o600);
    }

    #[test]
    fn a_change_by_another_store_is_seen_even_when_the_last_read_had_settled() {
        let dir = Dir::new("cache");
        let path = dir.0.join("tokens.json");
        let a = FileStore::open(&path);
        a.set_token("r", token("at-1", "rt-1"));
        let b = FileStore::open(&path);
        assert_eq!(b.token("r"), Some(token("at-1", "rt-1")));
        // As if the file had been read long after it was written.
        b.cache.lock().unwrap().as_mut().unwrap().settled = true;
        assert_eq!(b.token("r"), Some(token("at-1", "rt-1")));
        a.set_token("r", token("at-2", "rt-2"));
        assert_eq!(b.token("r"), Some(token("at-2", "rt-2")));
        a.remove_token("r");
        assert_eq!(b.token("r"), None);
    }

    #[test]
    fn a_stamp_settles_only_well_after_its_times() {
        let dir = Dir::new("settle");
        let path = dir.0.join("tokens.json");
        FileStore::open(&path).set_token("r", token("at-1", "rt-1"));
        let (_, stamp) = read_stamped(&path).unwrap();
        let now = SystemTime::now();
        assert!(!stamp.settled(now));
        assert!(!stamp.settled(now + Duration::from_secs(1)));
        assert!(stamp.settled(now + Stamp::SETTLE + Duration::from_secs(1)));
    }

    #[test]
    fn two_stores_on_one_path_keep_each_others_keys() {
        let dir = Dir::new("two");
        let path = dir.0.join("tokens.json");
        let a = FileStore::open(&path);
        let b = FileStore::open(&path);
        a.set_token("https://a.example/mcp", token("at-a", "rt-a"));
        b.set_token("https://b.example/mcp", token("at-b", "rt-b"));
        a.set_client(client("https://as-a.example", "ca"));
        b.set_client(client("https://as-b.example", "cb"));
        let fresh = FileStore::open(&path);
        for store in [&a, &b, &fresh] {
            assert_eq!(
                store.token("https://a.example/mcp"),
                Some(token("at-a", "rt-a"))
            );
            assert_eq!(
                store.token("https://b.example/mcp"),
                Some(token("at-b", "rt-b"))
            );
            assert!(store.client("https://as-a.example").is_some());
            assert!(store.client("https://as-b.example").is_some());
        }
    }

    /// The rule: the last writer of a key wins; every other key is kept as the file has it.
    #[test]
    fn a_token_rotated_by_another_store_is_never_written_back() {
        let dir = Dir::new("rotate");
        let path = dir.0.join("tokens.json");
        let a = FileStore::open(&path);
        a.set_token("r", token("at-1", "rt-1"));
        let b = FileStore::open(&path);
        assert_eq!(b.token("r"), Some(token("at-1", "rt-1")));
        // B refreshes: rt-1 is spent, rt-2 replaces it.
        b.set_token("r", token("at-2", "rt-2"));
        // A changes something else, then removes another resource's token.
        a.set_client(client("https://as.example", "c1"));
        a.remove_token("other");
        assert_eq!(a.token("r"), Some(token("at-2", "rt-2")), "A sees B's");
        assert_eq!(
            FileStore::open(&path).token("r"),
            Some(token("at-2", "rt-2"))
        );
        // A refreshes later (with rt-2, which it read): its write of that key wins.
        a.set_token("r", token("at-3", "rt-3"));
        assert_eq!(b.token("r"), Some(token("at-3", "rt-3")));
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_never_followed() {
        let dir = Dir::new("symlink");
        let path = dir.0.join("tokens.json");
        let victim = dir.0.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // Every name an older store used for its temporary file, and some plausible ones.
        let pid = std::process::id();
        for name in [
            format!("tokens.json.tmp{pid}"),
            format!("tokens.json.tmp{}", pid + 1),
            "tokens.json.tmp".into(),
            ".tokens.json.tmp".into(),
        ] {
            std::os::unix::fs::symlink(&victim, dir.0.join(name)).unwrap();
        }
        let store = FileStore::open(&path);
        store.set_token("r", token("at-1", "rt-1"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(
            FileStore::open(&path).token("r"),
            Some(token("at-1", "rt-1"))
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_planted_as_the_lock_is_refused_and_the_change_kept_in_memory() {
        let dir = Dir::new("lock-symlink");
        let path = dir.0.join("tokens.json");
        let victim = dir.0.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.0.join("tokens.json.lock")).unwrap();
        let store = FileStore::open(&path);
        store.set_token("r", token("at-1", "rt-1"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!path.exists(), "nothing written without the lock");
        assert_eq!(store.token("r"), Some(token("at-1", "rt-1")), "kept");
        // Once the lock can be taken, the change is written with the next one.
        std::fs::remove_file(dir.0.join("tokens.json.lock")).unwrap();
        store.set_client(client("https://as.example", "c1"));
        let fresh = FileStore::open(&path);
        assert_eq!(fresh.token("r"), Some(token("at-1", "rt-1")));
        assert!(fresh.client("https://as.example").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn temporary_names_are_random_and_created_exclusively_owner_only() {
        let dir = Dir::new("temp");
        let path = dir.0.join("tokens.json");
        let (_f1, t1) = create_temp(&path).unwrap();
        let (_f2, t2) = create_temp(&path).unwrap();
        assert_ne!(t1.path, t2.path);
        for t in [&t1, &t2] {
            let name = t.path.file_name().unwrap().to_str().unwrap();
            let hex = name
                .strip_prefix(".tokens.json.")
                .and_then(|n| n.strip_suffix(".tmp"))
                .unwrap();
            assert!(hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(mode(&t.path), 0o600);
        }
        drop((t1, t2));
        assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 0, "removed");
    }

    #[test]
    fn a_corrupt_store_reads_as_empty_and_is_replaced() {
        let dir = Dir::new("corrupt");
        let path = dir.0.join("tokens.json");
        let bad: [&[u8]; 6] = [
            b"{not json",
            b"[1,2,3]",
            b"{\"tokens\": {\"r\": {\"issuer\": 5}}}",
            &[0xff, 0xfe, 0x00],
            &[b'['; 100_000],
            b"",
        ];
        for bytes in bad {
            std::fs::write(&path, bytes).unwrap();
            let store = FileStore::open(&path);
            assert_eq!(store.token("r"), None);
            store.set_token("r", token("at-1", "rt-1"));
            assert_eq!(store.token("r"), Some(token("at-1", "rt-1")));
        }
    }

    #[test]
    fn a_huge_store_is_not_read() {
        let dir = Dir::new("huge");
        let path = dir.0.join("tokens.json");
        // Sparse: 1 GiB on paper, nothing on disk.
        let file = File::create(&path).unwrap();
        file.set_len(1 << 30).unwrap();
        drop(file);
        assert!(matches!(read(&path), Err(ReadError::Corrupt(_))));
        let store = FileStore::open(&path);
        assert_eq!(store.token("r"), None);
        store.set_token("r", token("at-1", "rt-1"));
        assert!(std::fs::metadata(&path).unwrap().len() < 4096);
    }

    #[test]
    fn a_token_too_large_to_store_is_kept_in_memory() {
        let dir = Dir::new("too-large");
        let path = dir.0.join("tokens.json");
        let store = FileStore::open(&path);
        let big = "x".repeat(MAX_FILE as usize);
        store.set_token("r", token(&big, "rt"));
        assert!(!path.exists());
        assert_eq!(
            store.token("r").unwrap().access_token.expose().len(),
            big.len()
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_directory_at_the_path_is_not_waited_on() {
        let dir = Dir::new("fifo");
        let fifo = dir.0.join("fifo.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(read(&fifo), Err(ReadError::Corrupt(_))));
        assert_eq!(FileStore::open(&fifo).token("r"), None);
        let sub = dir.0.join("sub.json");
        std::fs::create_dir(&sub).unwrap();
        let store = FileStore::open(&sub);
        assert_eq!(store.token("r"), None);
        store.set_token("r", token("at-1", "rt-1"));
        assert_eq!(store.token("r"), Some(token("at-1", "rt-1")));
    }

    #[test]
    fn writers_on_threads_lose_nothing() {
        let dir = Dir::new("threads");
        let path = dir.0.join("tokens.json");
        let shared = std::sync::Arc::new(FileStore::open(&path));
        std::thread::scope(|s| {
            for t in 0..4 {
                let path = &path;
                let shared = std::sync::Arc::clone(&shared);
                s.spawn(move || {
                    // Half the threads with a store of their own, half sharing one.
                    let own = FileStore::open(path);
                    let store: &FileStore = if t % 2 == 0 { &own } else { &shared };
                    for i in 0..15 {
                        store.set_token(&format!("t{t}-{i}"), token(&format!("at{i}"), "rt"));
                    }
                });
            }
        });
        let fresh = FileStore::open(&path);
        for t in 0..4 {
            for i in 0..15 {
                assert!(fresh.token(&format!("t{t}-{i}")).is_some(), "t{t}-{i} lost");
            }
        }
    }

    const CHILD_PATH: &str = "MCP_STORE_TEST_CHILD_PATH";
    const CHILD_PREFIX: &str = "MCP_STORE_TEST_CHILD_PREFIX";
    const CHILD_WRITES: usize = 20;

    /// The writer of `writers_in_processes_lose_nothing`, run in a child process (does nothing
    /// when run by the test harness itself).
    #[test]
    fn child_writer() {
        let (Some(path), Some(prefix)) = (
            std::env::var_os(CHILD_PATH),
            std::env::var(CHILD_PREFIX).ok(),
        ) else {
            return;
        };
        let store = FileStore::open(PathBuf::from(path));
        for i in 0..CHILD_WRITES {
            store.set_token(&format!("{prefix}-{i}"), token(&format!("at{i}"), "rt"));
        }
    }

    #[test]
    fn writers_in_processes_lose_nothing() {
        let dir = Dir::new("processes");
        let path = dir.0.join("tokens.json");
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = ["p1", "p2"]
            .into_iter()
            .map(|prefix| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "auth::store::file::tests::child_writer",
                        "--test-threads=1",
                    ])
                    .env(CHILD_PATH, &path)
                    .env(CHILD_PREFIX, prefix)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let store = FileStore::open(&path);
        for i in 0..CHILD_WRITES {
            store.set_token(&format!("p0-{i}"), token(&format!("at{i}"), "rt"));
        }
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let fresh = FileStore::open(&path);
        for prefix in ["p0", "p1", "p2"] {
            for i in 0..CHILD_WRITES {
                assert!(
                    fresh.token(&format!("{prefix}-{i}")).is_some(),
                    "{prefix}-{i} lost"
                );
            }
        }
    }
}
