//! One computation for callers who arrive together. `/api/v1/health`
//! (open to anyone) and `/metrics` read tables that grow with use (the
//! task queue grouped by kind and status, the ledger and runs by status):
//! a caller who arrives while such a read is under way waits for it and
//! shares its answer instead of starting another, so a flood of requests
//! costs one read at a time however many arrive. A caller who arrives
//! after a read finished starts a fresh one, so nothing it did before is
//! missed.

use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

type InFlight<T> = Shared<BoxFuture<'static, Result<T, Arc<String>>>>;

/// A read shared by the callers who arrive while it runs.
pub struct SharedRead<T: Clone + Send + Sync + 'static> {
    running: Mutex<Option<(u64, InFlight<T>)>>,
    next: std::sync::atomic::AtomicU64,
}

impl<T: Clone + Send + Sync + 'static> Default for SharedRead<T> {
    fn default() -> Self {
        SharedRead { running: Mutex::new(None), next: Default::default() }
    }
}

impl<T: Clone + Send + Sync + 'static> SharedRead<T> {
    /// The answer of the read under way, or of `read` started now. An
    /// error is its message (the cause is logged by whoever reports it).
    pub async fn get<F>(&self, read: impl FnOnce() -> F) -> Result<T, Arc<String>>
    where
        F: Future<Output = Result<T, String>> + Send + 'static,
    {
        let (id, running) = {
            let mut slot = self.running.lock().unwrap_or_else(|e| e.into_inner());
            match &*slot {
                Some((id, running)) if running.peek().is_none() => (*id, running.clone()),
                _ => {
                    let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let future = read();
                    let running = async move { future.await.map_err(Arc::new) }.boxed().shared();
                    *slot = Some((id, running.clone()));
                    (id, running)
                }
            }
        };
        let answer = running.await;
        let mut slot = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|(current, _)| *current == id) {
            *slot = None;
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn callers_who_arrive_together_share_one_read_and_later_ones_read_again() {
        let shared = Arc::new(SharedRead::<usize>::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let callers = (0..20).map(|_| {
            let reads = reads.clone();
            let mut released = released.clone();
            shared.get(move || async move {
                let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
                let _ = released.wait_for(|r| *r).await;
                Ok(n)
            })
        });
        // Every caller has asked before the read is let finish.
        let (answers, ()) = tokio::join!(futures_util::future::join_all(callers), async {
            while reads.load(Ordering::SeqCst) == 0 {
                tokio::task::yield_now().await;
            }
            release.send(true).unwrap();
        });
        assert!(answers.iter().all(|a| a.as_ref().ok() == Some(&1)), "{answers:?}");
        assert_eq!(reads.load(Ordering::SeqCst), 1, "twenty callers who arrived together made one read");
        let reads2 = reads.clone();
        let later = shared.get(move || async move { Ok(reads2.fetch_add(1, Ordering::SeqCst) + 1) }).await.unwrap();
        assert_eq!(later, 2, "a caller after the read finished reads again");
    }
}
