//! Where blocking file work runs: a bounded number of workers, each job
//! stopped at the call's deadline (checked between chunks) or as soon as
//! the call that asked for it is gone. When every worker is busy — a file
//! system that hangs, a flood of calls — a call waits briefly and then gets
//! `unavailable`, never a hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::bindings::capstan::host::types::HostError;

/// File jobs running at once, across every call of one runtime.
const WORKERS: usize = 16;

/// The longest a call waits for a free worker.
const MAX_WAIT: Duration = Duration::from_secs(2);

/// Tells a running job to give up.
#[derive(Clone)]
pub struct Stop {
    deadline: Instant,
    abandoned: Arc<AtomicBool>,
}

impl Stop {
    /// `unavailable` once the call's deadline has passed or the call is gone.
    pub fn check(&self, what: &str) -> Result<(), HostError> {
        if self.abandoned.load(Ordering::Relaxed) {
            return Err(HostError::Unavailable(format!("{what}: the call ended before the work was done")));
        }
        if Instant::now() >= self.deadline {
            return Err(HostError::Unavailable(format!("{what}: stopped at the call's deadline")));
        }
        Ok(())
    }
}

/// Marks the job abandoned when the call's future is dropped.
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

pub(crate) struct FilePool {
    permits: Arc<Semaphore>,
}

impl Default for FilePool {
    fn default() -> Self {
        FilePool { permits: Arc::new(Semaphore::new(WORKERS)) }
    }
}

impl FilePool {
    /// Runs `job` on a worker; `deadline` is the call's.
    pub async fn run<T: Send + 'static>(
        &self,
        deadline: Instant,
        job: impl FnOnce(&Stop) -> Result<T, HostError> + Send + 'static,
    ) -> Result<T, HostError> {
        let wait = deadline.saturating_duration_since(Instant::now()).min(MAX_WAIT);
        let permit = match tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                return Err(HostError::Unavailable(
                    "every file worker of the host is busy (a file system may be hanging); try again later".into(),
                ));
            }
        };
        let stop = Stop { deadline, abandoned: Arc::new(AtomicBool::new(false)) };
        let _abandon = Abandon(stop.abandoned.clone());
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job(&stop)
        });
        task.await.unwrap_or_else(|e| Err(HostError::Internal(format!("file task failed: {e}"))))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{FilePool, WORKERS};
    use crate::bindings::capstan::host::types::HostError;

    #[tokio::test(flavor = "multi_thread")]
    async fn a_pool_with_every_worker_stuck_answers_unavailable() {
        let pool = std::sync::Arc::new(FilePool::default());
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = std::sync::Arc::new(std::sync::Mutex::new(held));
        let far = Instant::now() + Duration::from_secs(60);
        let mut stuck = Vec::new();
        for _ in 0..WORKERS {
            let (pool, held) = (pool.clone(), held.clone());
            // Each job blocks as a hung file system would, until released.
            stuck.push(tokio::spawn(async move {
                pool.run(far, move |_| {
                    let _ = held.lock().unwrap().recv();
                    Ok(())
                })
                .await
            }));
        }
        while pool.permits.available_permits() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let answer = pool.run(far, |_| Ok(())).await;
        assert!(matches!(answer, Err(HostError::Unavailable(m)) if m.contains("busy")));
        for _ in 0..WORKERS {
            release.send(()).unwrap();
        }
        for job in stuck {
            job.await.unwrap().unwrap();
        }
        assert!(pool.run(far, |_| Ok(())).await.is_ok());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_job_stops_at_the_deadline() {
        let pool = FilePool::default();
        let deadline = Instant::now() + Duration::from_millis(200);
        let answer = pool
            .run(deadline, |stop| {
                loop {
                    stop.check("hashing")?;
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .await;
        assert!(matches!(answer, Err::<(), _>(HostError::Unavailable(m)) if m.contains("deadline")));
    }
}
