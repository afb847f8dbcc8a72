//! The tasks a service starts for itself (a listener, a writer, a link),
//! owned by the service and ended together. A service built outside a
//! process's run (a test embedding the host, a one-shot command) still gets
//! its tasks; the composition root ends them with [`Background::close`]
//! when the process stops, so none is left running behind it.

use std::future::Future;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// One service's own tasks: each ends when its future does or when the
/// service is closed, whichever comes first.
#[derive(Clone, Default)]
pub struct Background {
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Background {
    /// Runs `task` until it ends or [`Background::close`] is called (then
    /// it is dropped where it waits). Must be called inside a tokio
    /// runtime.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = task => {}
            }
        });
    }

    /// Runs `task`, which watches [`Background::stopping`] and ends itself
    /// in its own time (letting go of what it holds first);
    /// [`Background::close`] waits for it.
    pub fn spawn_watching(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(task);
    }

    /// A token cancelled when the service is closed.
    pub fn stopping(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Ends every task and waits until each has. Tasks spawned afterwards
    /// end at once.
    pub async fn close(&self) {
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Tasks still running.
    pub fn running(&self) -> usize {
        self.tasks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Background;

    #[tokio::test]
    async fn close_ends_every_task_and_waits_for_them() {
        let background = Background::default();
        let (told, mut ended) = tokio::sync::mpsc::channel::<()>(4);
        for _ in 0..3 {
            let told = told.clone();
            background.spawn(async move {
                // Holds the sender until dropped: the receiver sees every
                // task gone only when each future was dropped.
                let _held = told;
                std::future::pending::<()>().await;
            });
        }
        drop(told);
        assert_eq!(background.running(), 3);
        background.close().await;
        assert_eq!(background.running(), 0);
        assert!(ended.recv().await.is_none(), "a task outlived close");
        // After close, a new task does not run on.
        background.spawn(std::future::pending());
        background.close().await;
        assert_eq!(background.running(), 0);
    }
}
