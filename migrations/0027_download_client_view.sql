-- What the client last said about a download besides its status and
-- progress, so the Library can show it: qBittorrent's own state name, the
-- download speed (bytes a second), the seeds it is connected to, and its
-- estimate of the seconds left. Empty until the next sync reads them.
ALTER TABLE download_task ADD COLUMN client_state TEXT;
ALTER TABLE download_task ADD COLUMN download_speed BIGINT;
ALTER TABLE download_task ADD COLUMN seeds BIGINT;
ALTER TABLE download_task ADD COLUMN eta_seconds BIGINT;
