//! qBittorrent torrent states and how they map to Capstan's download
//! statuses. Both naming lines are understood: 4.x `pausedDL/pausedUP` and
//! 5.x `stoppedDL/stoppedUP` mean the same thing and map to one variant.

/// A torrent's `state` field from `torrents/info`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TorrentState {
    /// Some error occurred (I/O, tracker-independent).
    Error,
    /// Files that should be there are not (moved, deleted, unmounted).
    MissingFiles,
    /// Seeding with peers connected.
    Uploading,
    /// Finished and stopped by the user (`pausedUP` on 4.x, `stoppedUP` on 5.x).
    StoppedUp,
    /// Finished, waiting in the seeding queue.
    QueuedUp,
    /// Finished, seeding with nobody connected.
    StalledUp,
    /// Finished, its data being verified.
    CheckingUp,
    /// Finished, force-started seeding.
    ForcedUp,
    /// Preallocating disk space.
    Allocating,
    /// Downloading data.
    Downloading,
    /// Fetching metadata (a magnet link without its torrent file yet).
    MetaDl,
    /// Force-started while fetching metadata.
    ForcedMetaDl,
    /// Unfinished and stopped by the user (`pausedDL` / `stoppedDL`).
    StoppedDl,
    /// Unfinished, waiting in the download queue.
    QueuedDl,
    /// Unfinished, nobody to download from.
    StalledDl,
    /// Unfinished, its data being verified.
    CheckingDl,
    /// Force-started download.
    ForcedDl,
    /// Loading resume data at startup.
    CheckingResumeData,
    /// Its files are being moved to another folder.
    Moving,
    /// qBittorrent's own `unknown`, or a name this client does not know
    /// (kept as sent so it can be logged).
    Unknown(String),
}

/// What Capstan's download records say about a torrent: the contract's
/// download status, of which a torrent's state maps to the first seven
/// (`queued` to `completed`); importing and after are the host's.
pub use capstan_contract::status::DownloadStatus;

impl TorrentState {
    /// Reads a `state` string exactly as qBittorrent sends it.
    pub fn from_api(state: &str) -> TorrentState {
        use TorrentState as S;
        match state {
            "error" => S::Error,
            "missingFiles" => S::MissingFiles,
            "uploading" => S::Uploading,
            "pausedUP" | "stoppedUP" => S::StoppedUp,
            "queuedUP" => S::QueuedUp,
            "stalledUP" => S::StalledUp,
            "checkingUP" => S::CheckingUp,
            "forcedUP" => S::ForcedUp,
            "allocating" => S::Allocating,
            "downloading" => S::Downloading,
            "metaDL" => S::MetaDl,
            "forcedMetaDL" => S::ForcedMetaDl,
            "pausedDL" | "stoppedDL" => S::StoppedDl,
            "queuedDL" => S::QueuedDl,
            "stalledDL" => S::StalledDl,
            "checkingDL" => S::CheckingDl,
            "forcedDL" => S::ForcedDl,
            "checkingResumeData" => S::CheckingResumeData,
            "moving" => S::Moving,
            other => S::Unknown(other.to_string()),
        }
    }

    /// Whether qBittorrent considers the wanted data complete. A check in
    /// progress is not finished: the check may still find pieces missing.
    pub fn is_finished(&self) -> bool {
        use TorrentState as S;
        matches!(self, S::Uploading | S::StoppedUp | S::QueuedUp | S::StalledUp | S::ForcedUp)
    }

    /// Whether qBittorrent is loading or verifying the torrent's data. Wait
    /// for this to end before asking for a recheck: qBittorrent 4.5 leaves a
    /// torrent rechecked while loading stuck in checking.
    pub fn is_checking(&self) -> bool {
        matches!(self, TorrentState::CheckingUp | TorrentState::CheckingDl | TorrentState::CheckingResumeData)
    }

    /// Whether the torrent is stopped by a user (it will not start by itself).
    pub fn is_stopped(&self) -> bool {
        matches!(self, TorrentState::StoppedUp | TorrentState::StoppedDl)
    }

    /// The Capstan status for this state at `progress` (0.0 to 1.0).
    ///
    /// Completed needs both a finished state and all pieces: a finished
    /// torrent below 100% had files deselected, so what is on disk is not
    /// the whole release and nothing more will arrive (stalled).
    pub fn status(&self, progress: f64) -> DownloadStatus {
        use DownloadStatus as D;
        use TorrentState as S;
        match self {
            S::Error => D::Failed,
            S::MissingFiles => D::Missing,
            S::Uploading | S::StoppedUp | S::QueuedUp | S::StalledUp | S::ForcedUp if progress >= 1.0 => D::Completed,
            S::StoppedUp => D::Paused,
            S::Uploading | S::QueuedUp | S::StalledUp | S::ForcedUp => D::Stalled,
            S::QueuedDl | S::MetaDl | S::CheckingUp | S::CheckingDl | S::CheckingResumeData => D::Queued,
            S::Downloading | S::ForcedDl | S::ForcedMetaDl | S::Allocating | S::Moving => D::Downloading,
            S::StoppedDl => D::Paused,
            S::StalledDl | S::Unknown(_) => D::Stalled,
        }
    }
}
