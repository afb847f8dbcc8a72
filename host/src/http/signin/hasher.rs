//! Password checks on a fixed pool of threads. Argon2 is built to be
//! expensive in memory (19 MiB a check with the parameters Capstan stores)
//! and time, so an unauthenticated caller must not be able to start as
//! many checks as it sends requests: at most [`WORKERS`] run at once, at
//! most [`QUEUED`] more wait, and any request beyond that is told the
//! host is busy. Each worker keeps its Argon2 memory between checks, so
//! the memory a flood can take is the pool's and stays allocated for reuse
//! instead of growing the allocator's arenas with every blocking thread
//! that happens to run a check.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};

use argon2::password_hash::phc::{Output, PasswordHash};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::oneshot;

/// Checks that run at once.
pub const WORKERS: usize = 2;
/// Checks that may wait for a worker; more are refused as busy.
pub(crate) const QUEUED: usize = 8;
/// Largest Argon2 memory a stored hash may ask for (64 MiB): a hash
/// written by hand into the database cannot make a check take more.
const MAX_BLOCKS: u32 = 64 * 1024;

/// The pool is full: try again shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

struct Job {
    /// The stored PHC string; `None` for a name without a password, which
    /// is checked against nothing at the same cost.
    stored: Option<String>,
    password: String,
    answer: oneshot::Sender<bool>,
}

/// A handle on the pool; cheap to clone.
#[derive(Clone)]
pub(crate) struct PasswordPool {
    jobs: SyncSender<Job>,
}

impl Default for PasswordPool {
    fn default() -> Self {
        PasswordPool::start()
    }
}

impl PasswordPool {
    /// Starts [`WORKERS`] threads that live as long as the process.
    pub fn start() -> PasswordPool {
        let (jobs, queue) = sync_channel::<Job>(QUEUED);
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..WORKERS {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new().name(format!("capstan-password-{n}")).spawn(move || work(&queue));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a password-checking thread");
            }
        }
        PasswordPool { jobs }
    }

    /// Whether `password` matches `stored` (a name without a password
    /// never matches, after the same work); `Busy` when the pool is full.
    pub async fn verify(&self, stored: Option<String>, password: &str) -> Result<bool, Busy> {
        let (answer, answered) = oneshot::channel();
        let job = Job { stored, password: password.to_string(), answer };
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(Busy),
            // No worker is left: nothing can sign in, say so as busy.
            Err(TrySendError::Disconnected(_)) => return Err(Busy),
        }
        answered.await.map_err(|_| Busy)
    }
}

fn work(queue: &Mutex<Receiver<Job>>) {
    // Kept for this thread's life and reused by every check it runs.
    let mut blocks: Vec<Block> = Vec::new();
    loop {
        let job = {
            let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        let matched = match &job.stored {
            Some(stored) => verify(&mut blocks, stored, job.password.as_bytes()),
            None => {
                spend_as_for_a_password(&mut blocks, job.password.as_bytes());
                false
            }
        };
        // The caller may have left; its answer is simply dropped.
        let _ = job.answer.send(matched);
    }
}

/// Checks `password` against the PHC string `stored` using `blocks`.
fn verify(blocks: &mut Vec<Block>, stored: &str, password: &[u8]) -> bool {
    let Ok(hash) = PasswordHash::new(stored) else { return false };
    let (Some(salt), Some(expected)) = (&hash.salt, &hash.hash) else { return false };
    let Ok(params) = Params::try_from(&hash) else { return false };
    let Ok(algorithm) = Algorithm::try_from(hash.algorithm.as_str()) else { return false };
    let version = match hash.version.map(Version::try_from).transpose() {
        Ok(version) => version.unwrap_or_default(),
        Err(_) => return false,
    };
    if params.m_cost() > MAX_BLOCKS {
        tracing::error!(m_cost = params.m_cost(), "a stored password hash asks for more memory than allowed");
        return false;
    }
    let mut out = vec![0u8; expected.len()];
    if !hash_into(blocks, Argon2::new(algorithm, version, params), password, salt, &mut out) {
        return false;
    }
    // `Output`'s equality is constant-time.
    Output::new(&out).is_ok_and(|computed| computed == *expected)
}

/// The work of checking a password stored with the parameters Capstan
/// uses, against nothing: a name without a password costs what a name
/// with one does.
fn spend_as_for_a_password(blocks: &mut Vec<Block>, password: &[u8]) {
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    hash_into(blocks, Argon2::default(), password, b"capstan-no-such-user", &mut out);
}

fn hash_into(blocks: &mut Vec<Block>, argon: Argon2<'_>, password: &[u8], salt: &[u8], out: &mut [u8]) -> bool {
    let needed = argon.params().block_count();
    if blocks.len() < needed {
        blocks.resize(needed, Block::default());
    }
    argon.hash_password_into_with_memory(password, salt, out, &mut blocks[..needed]).is_ok()
}

#[cfg(test)]
mod tests {
    use argon2::PasswordHasher;

    use super::*;

    #[tokio::test]
    async fn a_stored_password_is_checked_and_a_missing_one_never_matches() {
        let stored = Argon2::default().hash_password(b"correct horse battery").unwrap().to_string();
        let pool = PasswordPool::start();
        assert_eq!(pool.verify(Some(stored.clone()), "correct horse battery").await, Ok(true));
        assert_eq!(pool.verify(Some(stored.clone()), "correct horse batterx").await, Ok(false));
        assert_eq!(pool.verify(None, "correct horse battery").await, Ok(false));
        assert_eq!(pool.verify(Some("not a hash".into()), "x").await, Ok(false));
    }

    #[tokio::test]
    async fn more_checks_than_the_pool_holds_are_refused_as_busy() {
        let pool = PasswordPool::start();
        let checks: Vec<_> = (0..WORKERS + QUEUED + 8).map(|_| pool.verify(None, "guess")).collect();
        let answers = futures_util::future::join_all(checks).await;
        let busy = answers.iter().filter(|a| **a == Err(Busy)).count();
        assert!(busy >= 8, "{busy} of {} refused", answers.len());
        assert!(answers.iter().filter(|a| **a == Ok(false)).count() >= QUEUED);
    }
}
