//! A process's output: every byte it writes to stdout and stderr, in the
//! order it arrives, archived in a file under the data folder's
//! `command-output` (the file root of that name) up to the command's
//! archive limit, with the first and last bytes kept in memory for the
//! preview a result shows. Past the limit output is still read — a process
//! must never block on a full pipe — and counted, but dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the archive holds so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Written {
    /// Bytes the process wrote.
    pub bytes: u64,
    /// Whether the archive stopped keeping them.
    pub truncated: bool,
    pub head: Vec<u8>,
    /// The last bytes, when more were written than the head holds.
    pub tail: Vec<u8>,
}

pub(crate) struct Archive {
    /// Relative to the `command-output` root.
    pub name: String,
    path: PathBuf,
    limit: u64,
    /// Bytes of head and of tail kept for the preview.
    half: usize,
    state: Mutex<State>,
}

struct State {
    file: Option<std::fs::File>,
    written: Written,
    /// The tail as a ring: the newest bytes end at `tail_at`.
    ring: Vec<u8>,
    tail_at: usize,
}

impl Archive {
    /// Creates `<dir>/<handle>.log`, keeping at most `limit` bytes and a
    /// preview of `preview` bytes.
    pub fn create(dir: &Path, handle: &str, limit: u64, preview: u64) -> std::io::Result<Archive> {
        std::fs::create_dir_all(dir)?;
        let name = format!("{handle}.log");
        let path = dir.join(&name);
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
        let half = (preview / 2) as usize;
        let state = State { file: Some(file), written: Written::default(), ring: Vec::new(), tail_at: 0 };
        Ok(Archive { name, path, limit, half, state: Mutex::new(state) })
    }

    /// Adds what the process wrote next.
    pub fn append(&self, chunk: &[u8]) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let kept = s.written.bytes.min(self.limit);
        let room = (self.limit - kept) as usize;
        if let Some(file) = s.file.as_mut()
            && room > 0
        {
            let take = room.min(chunk.len());
            if let Err(e) = file.write_all(&chunk[..take]) {
                tracing::warn!(archive = %self.path.display(), error = %e, "cannot archive command output");
                s.file = None;
                s.written.truncated = true;
            }
        }
        if chunk.len() > room {
            s.written.truncated = true;
        }
        let head_room = self.half.saturating_sub(s.written.head.len());
        let (to_head, rest) = chunk.split_at(head_room.min(chunk.len()));
        s.written.head.extend_from_slice(to_head);
        for &b in rest {
            if s.ring.len() < self.half {
                s.ring.push(b);
                s.tail_at = s.ring.len() % self.half.max(1);
            } else if self.half > 0 {
                let at = s.tail_at;
                s.ring[at] = b;
                s.tail_at = (at + 1) % self.half;
            }
        }
        s.written.bytes += chunk.len() as u64;
    }

    /// Writes what is buffered to disk and closes the file.
    pub fn close(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = s.file.take()
            && let Err(e) = file.sync_data()
        {
            tracing::warn!(archive = %self.path.display(), error = %e, "cannot sync command output");
        }
    }

    /// What was written so far, with the tail in order.
    pub fn written(&self) -> Written {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut written = s.written.clone();
        written.tail = if s.ring.len() < self.half {
            s.ring.clone()
        } else {
            [&s.ring[s.tail_at..], &s.ring[..s.tail_at]].concat()
        };
        written
    }

    /// Bytes the archive holds.
    pub fn kept(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).written.bytes.min(self.limit)
    }

    /// Up to `limit` archived bytes from `offset`. The folder is a file
    /// root others may write in, so what is opened must still be a plain
    /// file: a link or a FIFO put in the archive's place is refused, never
    /// followed or waited on.
    pub fn read(&self, offset: u64, limit: usize) -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        let mut file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(&self.path)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("the archive is no longer a plain file"));
        }
        file.seek(SeekFrom::Start(offset))?;
        let mut out = Vec::with_capacity(limit.min(1 << 20));
        file.take(limit as u64).read_to_end(&mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_keeps_the_start_and_the_end_and_the_archive_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let archive = Archive::create(dir.path(), "h1", 1000, 8).unwrap();
        for chunk in [b"abcdef".as_slice(), b"ghijkl", b"mnop"] {
            archive.append(chunk);
        }
        let written = archive.written();
        assert_eq!((written.head.as_slice(), written.tail.as_slice()), (b"abcd".as_slice(), b"mnop".as_slice()));
        assert_eq!((written.bytes, written.truncated), (16, false));
        archive.close();
        assert_eq!(archive.read(0, 100).unwrap(), b"abcdefghijklmnop");
        assert_eq!(archive.read(14, 100).unwrap(), b"op");

        let small = Archive::create(dir.path(), "h2", 5, 8).unwrap();
        small.append(b"0123456789");
        small.close();
        assert_eq!(small.read(0, 100).unwrap(), b"01234", "kept up to its limit");
        assert_eq!((small.written().bytes, small.written().truncated), (10, true), "and counted past it");
        assert!(Archive::create(dir.path(), "h2", 5, 8).is_err(), "an archive is never written over");
    }

    #[test]
    fn a_link_or_a_fifo_in_the_archives_place_is_refused_not_followed_or_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), "not yours").unwrap();
        let linked = Archive::create(dir.path(), "h1", 1000, 8).unwrap();
        std::fs::remove_file(dir.path().join("h1.log")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), dir.path().join("h1.log")).unwrap();
        assert!(linked.read(0, 100).is_err(), "a link is not followed");

        let piped = Archive::create(dir.path(), "h2", 1000, 8).unwrap();
        std::fs::remove_file(dir.path().join("h2.log")).unwrap();
        let made = std::process::Command::new("mkfifo").arg(dir.path().join("h2.log")).status().unwrap();
        assert!(made.success());
        // Would block forever if the FIFO were opened for a reader.
        assert!(piped.read(0, 100).is_err(), "a FIFO is refused");
    }
}
