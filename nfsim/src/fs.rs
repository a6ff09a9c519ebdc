//! The FUSE side of `polycrawl nfsim`: a pass-through file system over a backing
//! directory that answers lookups, listings and attributes through a [`ClientView`],
//! and fails some calls on purpose through [`Faults`].
//!
//! Inode numbers are this mount's own, tied to a path and to the backing file's inode:
//! when the file at a path is replaced (or renamed away) behind this client's back, the
//! old number answers `ESTALE`, as an NFS file handle would. The kernel is told to
//! cache nothing (entry and attribute TTL 0, direct I/O), so every lookup, listing and
//! read reaches this code. This module must never let a request panic the mount: every
//! failure is an errno in the reply.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use nix::libc;

use super::view::{ClientView, Fault, Faults};

/// The kernel caches nothing: this code decides what the client sees.
const TTL: Duration = Duration::ZERO;
const ROOT: u64 = 1;

/// One inode of this mount: a path under the backing directory and the backing
/// file's inode number when this mount gave the number out.
#[derive(Debug, Clone)]
struct Node {
    path: PathBuf,
    backing_ino: u64,
    lookups: u64,
}

#[derive(Debug)]
struct State {
    view: ClientView<FileAttr>,
    nodes: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next_ino: u64,
    dirs: HashMap<u64, Vec<(u64, FileType, OsString)>>,
}

/// The file system one nfsim mount serves.
#[derive(Debug)]
pub struct NfsFs {
    backing: PathBuf,
    faults: Faults,
    state: Mutex<State>,
    files: Mutex<HashMap<u64, Arc<File>>>,
    next_fh: AtomicU64,
}

fn errno(err: &io::Error) -> Errno {
    Errno::from_i32(err.raw_os_error().unwrap_or(libc::EIO))
}

fn kind_of(meta: &fs::Metadata) -> FileType {
    FileType::from_std(meta.file_type()).unwrap_or(FileType::RegularFile)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    let nsecs = u32::try_from(nsecs).unwrap_or(0);
    match u64::try_from(secs) {
        Ok(s) => UNIX_EPOCH + Duration::new(s, nsecs),
        Err(_) => UNIX_EPOCH,
    }
}

fn changed(meta: &fs::Metadata) -> SystemTime {
    time(meta.ctime(), meta.ctime_nsec())
}

fn attr_of(ino: u64, meta: &fs::Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: meta.size(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: changed(meta),
        crtime: changed(meta),
        kind: kind_of(meta),
        perm: u16::try_from(meta.mode() & 0o7777).unwrap_or(0o644),
        nlink: u32::try_from(meta.nlink()).unwrap_or(1),
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: u32::try_from(meta.rdev()).unwrap_or(0),
        blksize: u32::try_from(meta.blksize()).unwrap_or(4096),
        flags: 0,
    }
}

fn fault_errno(fault: Fault) -> Errno {
    match fault {
        Fault::Io => Errno::EIO,
        Fault::Stale => Errno::from_i32(libc::ESTALE),
    }
}

impl NfsFs {
    /// A mount over `backing` whose view of others' changes lags by `delay`.
    pub fn new(backing: &Path, delay: Duration, faults: Faults) -> io::Result<Self> {
        let backing = fs::canonicalize(backing)?;
        let meta = fs::metadata(&backing)?;
        let mut nodes = HashMap::new();
        nodes.insert(
            ROOT,
            Node {
                path: PathBuf::new(),
                backing_ino: meta.ino(),
                lookups: 1,
            },
        );
        let mut by_path = HashMap::new();
        by_path.insert(PathBuf::new(), ROOT);
        Ok(Self {
            backing,
            faults,
            state: Mutex::new(State {
                view: ClientView::new(delay),
                nodes,
                by_path,
                next_ino: ROOT + 1,
                dirs: HashMap::new(),
            }),
            files: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn files(&self) -> MutexGuard<'_, HashMap<u64, Arc<File>>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn real(&self, rel: &Path) -> PathBuf {
        self.backing.join(rel)
    }

    fn fault(&self) -> Result<(), Errno> {
        self.faults.draw().map_or(Ok(()), |f| Err(fault_errno(f)))
    }

    /// The path of inode `ino`, checked against the backing file: `ESTALE` if the
    /// file there is no longer the one this number was given for.
    fn path_of(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        let node = self
            .state()
            .nodes
            .get(&ino.0)
            .cloned()
            .ok_or(Errno::from_i32(libc::ESTALE))?;
        match fs::symlink_metadata(self.real(&node.path)) {
            Ok(meta) if meta.ino() == node.backing_ino => Ok(node.path),
            Ok(_) => Err(Errno::from_i32(libc::ESTALE)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.state().view.removed(&node.path);
                Err(Errno::from_i32(libc::ESTALE))
            }
            Err(e) => Err(errno(&e)),
        }
    }

    /// Gives out (or reuses) this mount's inode number for `rel`, whose backing file
    /// is `meta`, counting one kernel lookup.
    fn node_for(state: &mut State, rel: &Path, meta: &fs::Metadata) -> u64 {
        if let Some(&ino) = state.by_path.get(rel)
            && let Some(node) = state.nodes.get_mut(&ino)
            && node.backing_ino == meta.ino()
        {
            node.lookups += 1;
            return ino;
        }
        let ino = state.next_ino;
        state.next_ino += 1;
        state.nodes.insert(
            ino,
            Node {
                path: rel.to_path_buf(),
                backing_ino: meta.ino(),
                lookups: 1,
            },
        );
        state.by_path.insert(rel.to_path_buf(), ino);
        ino
    }

    /// The attributes of `rel` as this client sees them: cached for the delay.
    fn attr(&self, ino: u64, rel: &Path, meta: &fs::Metadata) -> FileAttr {
        let now = SystemTime::now();
        let mut state = self.state();
        if let Some(mut attr) = state.view.cached_attr(rel, now) {
            attr.ino = INodeNo(ino);
            return attr;
        }
        let attr = attr_of(ino, meta);
        state.view.store_attr(rel, attr, now);
        attr
    }

    /// Looks `rel` up for the kernel: present in the backing directory and visible to
    /// this client.
    fn lookup_path(&self, rel: &Path) -> Result<FileAttr, Errno> {
        let meta = match fs::symlink_metadata(self.real(rel)) {
            Ok(meta) => meta,
            Err(e) => {
                if e.kind() == io::ErrorKind::NotFound {
                    self.state().view.removed(rel);
                }
                return Err(errno(&e));
            }
        };
        let ino = {
            let mut state = self.state();
            if !state
                .view
                .entry_visible(rel, changed(&meta), SystemTime::now())
            {
                return Err(Errno::ENOENT);
            }
            Self::node_for(&mut state, rel, &meta)
        };
        Ok(self.attr(ino, rel, &meta))
    }

    /// After this client created `rel`: visible to it at once; the entry reply.
    fn made_here(&self, rel: &Path) -> Result<FileAttr, Errno> {
        self.state().view.created_here(rel);
        self.lookup_path(rel)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path_of(parent)?.join(name))
    }

    fn add_file(&self, file: File) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.files().insert(fh, Arc::new(file));
        fh
    }

    fn file(&self, fh: FileHandle) -> Result<Arc<File>, Errno> {
        self.files().get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    fn list(&self, rel: &Path) -> Result<Vec<(u64, FileType, OsString)>, Errno> {
        let mut out = vec![
            (ROOT, FileType::Directory, OsString::from(".")),
            (ROOT, FileType::Directory, OsString::from("..")),
        ];
        let now = SystemTime::now();
        for entry in fs::read_dir(self.real(rel)).map_err(|e| errno(&e))? {
            let entry = entry.map_err(|e| errno(&e))?;
            let Ok(meta) = entry.metadata() else {
                continue; // gone between the listing and the stat
            };
            let name = entry.file_name();
            if self
                .state()
                .view
                .entry_visible(&rel.join(&name), changed(&meta), now)
            {
                out.push((meta.ino(), kind_of(&meta), name));
            }
        }
        Ok(out)
    }
}

impl Filesystem for NfsFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self
            .child(parent, name)
            .and_then(|rel| self.lookup_path(&rel))
        {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        if ino.0 == ROOT {
            return;
        }
        let mut state = self.state();
        let gone = match state.nodes.get_mut(&ino.0) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(nlookup);
                (node.lookups == 0).then(|| node.path.clone())
            }
            None => None,
        };
        if let Some(path) = gone {
            state.nodes.remove(&ino.0);
            if state.by_path.get(&path) == Some(&ino.0) {
                state.by_path.remove(&path);
            }
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let result = (|| {
            if let Some(fh) = fh
                && let Ok(file) = self.file(fh)
            {
                let meta = file.metadata().map_err(|e| errno(&e))?;
                return Ok(attr_of(ino.0, &meta));
            }
            let rel = self.path_of(ino)?;
            let meta = fs::symlink_metadata(self.real(&rel)).map_err(|e| errno(&e))?;
            Ok(self.attr(ino.0, &rel, &meta))
        })();
        match result {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| {
            let rel = self.path_of(ino)?;
            let real = self.real(&rel);
            if let Some(mode) = mode {
                fs::set_permissions(&real, fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(|e| errno(&e))?;
            }
            if size.is_some() || atime.is_some() || mtime.is_some() {
                let file = match fh.map(|fh| self.file(fh)) {
                    Some(Ok(file)) => file,
                    _ => Arc::new(
                        OpenOptions::new()
                            .write(true)
                            .open(&real)
                            .map_err(|e| errno(&e))?,
                    ),
                };
                if let Some(size) = size {
                    file.set_len(size).map_err(|e| errno(&e))?;
                }
                let at = |t: TimeOrNow| match t {
                    TimeOrNow::SpecificTime(t) => t,
                    TimeOrNow::Now => SystemTime::now(),
                };
                let mut times = fs::FileTimes::new();
                if let Some(t) = atime {
                    times = times.set_accessed(at(t));
                }
                if let Some(t) = mtime {
                    times = times.set_modified(at(t));
                }
                if atime.is_some() || mtime.is_some() {
                    file.set_times(times).map_err(|e| errno(&e))?;
                }
            }
            self.state().view.changed_here(&rel);
            let meta = fs::symlink_metadata(&real).map_err(|e| errno(&e))?;
            Ok(attr_of(ino.0, &meta))
        })();
        match result {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let result = (|| {
            let rel = self.child(parent, name)?;
            let real = self.real(&rel);
            fs::create_dir(&real).map_err(|e| errno(&e))?;
            fs::set_permissions(&real, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(|e| errno(&e))?;
            self.made_here(&rel)
        })();
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = (|| {
            let rel = self.child(parent, name)?;
            fs::remove_file(self.real(&rel)).map_err(|e| errno(&e))?;
            self.state().view.removed(&rel);
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = (|| {
            let rel = self.child(parent, name)?;
            fs::remove_dir(self.real(&rel)).map_err(|e| errno(&e))?;
            self.state().view.removed(&rel);
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            self.fault()?;
            let from = self.child(parent, name)?;
            let to = self.child(newparent, newname)?;
            let (real_from, real_to) = (self.real(&from), self.real(&to));
            if flags.is_empty() {
                fs::rename(&real_from, &real_to).map_err(|e| errno(&e))?;
            } else {
                let flags = nix::fcntl::RenameFlags::from_bits_truncate(flags.bits());
                nix::fcntl::renameat2(
                    nix::fcntl::AT_FDCWD,
                    &real_from,
                    nix::fcntl::AT_FDCWD,
                    &real_to,
                    flags,
                )
                .map_err(|e| Errno::from_i32(e as i32))?;
            }
            let mut state = self.state();
            state.view.renamed(&from, &to);
            // This mount's numbers follow the rename (children of a directory too).
            let moved: Vec<(PathBuf, u64)> = state
                .by_path
                .iter()
                .filter(|(p, _)| p.starts_with(&from))
                .map(|(p, i)| (p.clone(), *i))
                .collect();
            state.by_path.remove(&to);
            for (old, ino) in moved {
                state.by_path.remove(&old);
                if let Ok(rest) = old.strip_prefix(&from) {
                    // `join("")` would add a trailing slash (ENOTDIR on a file).
                    let new = if rest.as_os_str().is_empty() {
                        to.clone()
                    } else {
                        to.join(rest)
                    };
                    if let Some(node) = state.nodes.get_mut(&ino) {
                        node.path.clone_from(&new);
                    }
                    state.by_path.insert(new, ino);
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            self.fault()?;
            let rel = self.path_of(ino)?;
            let file = options(flags.0)
                .open(self.real(&rel))
                .map_err(|e| errno(&e))?;
            if flags.0 & libc::O_TRUNC != 0 {
                self.state().view.changed_here(&rel);
            }
            Ok(self.add_file(file))
        })();
        match result {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = (|| {
            let rel = self.child(parent, name)?;
            let file = options(flags)
                .create(true)
                .mode(mode & !umask & 0o7777)
                .open(self.real(&rel))
                .map_err(|e| errno(&e))?;
            let attr = self.made_here(&rel)?;
            Ok((attr, self.add_file(file)))
        })();
        match result {
            Ok((attr, fh)) => reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(fh),
                FopenFlags::FOPEN_DIRECT_IO,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = (|| {
            self.fault()?;
            let file = self.file(fh)?;
            let mut buf = vec![0; size as usize];
            let mut filled = 0;
            while filled < buf.len() {
                match file.read_at(&mut buf[filled..], offset + filled as u64) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(errno(&e)),
                }
            }
            buf.truncate(filled);
            Ok(buf)
        })();
        match result {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = (|| {
            let file = self.file(fh)?;
            file.write_all_at(data, offset).map_err(|e| errno(&e))?;
            let mut state = self.state();
            if let Some(path) = state.nodes.get(&ino.0).map(|n| n.path.clone()) {
                state.view.changed_here(&path);
            }
            u32::try_from(data.len()).map_err(|_| Errno::EINVAL)
        })();
        match result {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files().remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self
            .file(fh)
            .and_then(|f| f.sync_all().map_err(|e| errno(&e)))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = (|| {
            self.fault()?;
            let rel = self.path_of(ino)?;
            let entries = self.list(&rel)?;
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            self.state().dirs.insert(fh, entries);
            Ok(fh)
        })();
        match result {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if offset == 0
            && let Err(e) = self.fault()
        {
            reply.error(e);
            return;
        }
        let state = self.state();
        let Some(entries) = state.dirs.get(&fh.0) else {
            reply.error(Errno::EBADF);
            return;
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(start) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.state().dirs.remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self.path_of(ino).and_then(|rel| {
            File::open(self.real(&rel))
                .and_then(|d| d.sync_all())
                .map_err(|e| errno(&e))
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match nix::sys::statvfs::statvfs(&self.backing) {
            Ok(s) => reply.statfs(
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
                u32::try_from(s.block_size()).unwrap_or(4096),
                u32::try_from(s.name_max()).unwrap_or(255),
                u32::try_from(s.fragment_size()).unwrap_or(4096),
            ),
            Err(e) => reply.error(Errno::from_i32(e as i32)),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        match self.path_of(ino) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

/// Open options for the kernel's open flags (access mode, truncate, append).
fn options(flags: i32) -> OpenOptions {
    let mut opts = OpenOptions::new();
    match flags & libc::O_ACCMODE {
        libc::O_WRONLY => opts.write(true),
        libc::O_RDWR => opts.read(true).write(true),
        _ => opts.read(true),
    };
    opts.custom_flags(flags & (libc::O_EXCL | libc::O_TRUNC | libc::O_APPEND | libc::O_NOFOLLOW));
    opts
}
