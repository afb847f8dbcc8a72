"""The scale-out benchmark's anchor: a maintained PostgreSQL job queue,
procrastinate, draining the same number of queued jobs with the same
number of worker processes as Capstan's workers get, each job doing
nothing. Prints one line; asserts nothing but that every job succeeded.

    procrastinate_drain.py DSN JOBS WORKERS CONCURRENCY

DSN names an empty database; the queue's schema is applied to it.
(Run by tests/benches/scaleout.rs with the interpreter of the virtualenv
`scripts/setup.sh --bench` makes.)
"""

import asyncio
import logging
import subprocess
import sys
import time

import procrastinate
from importlib.metadata import version


# Its advice on where an app should live is for applications, not this.
logging.getLogger("procrastinate").setLevel(logging.ERROR)


def app_for(dsn: str) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app


async def queue(dsn: str, jobs: int) -> None:
    app = app_for(dsn)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        noop = app.tasks["noop"]
        for start in range(0, jobs, 1000):
            await noop.batch_defer_async(*({} for _ in range(min(1000, jobs - start))))


async def work(dsn: str, concurrency: int) -> None:
    app = app_for(dsn)
    async with app.open_async():
        # Stops once the queue is empty; the clock is the parent's.
        await app.run_worker_async(
            concurrency=concurrency, wait=False, install_signal_handlers=False, listen_notify=False
        )


async def count_succeeded(dsn: str) -> int:
    app = app_for(dsn)
    async with app.open_async():
        rows = await app.connector.execute_query_all_async(
            "SELECT COUNT(*) AS n FROM procrastinate_jobs WHERE status = 'succeeded'"
        )
        return int(rows[0]["n"])


def main() -> None:
    if sys.argv[1] == "work":
        asyncio.run(work(sys.argv[2], int(sys.argv[3])))
        return
    dsn, jobs, workers, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    asyncio.run(queue(dsn, jobs))
    started = time.monotonic()
    procs = [
        subprocess.Popen([sys.executable, __file__, "work", dsn, str(concurrency)]) for _ in range(workers)
    ]
    failed = [p for p in procs if p.wait() != 0]
    secs = time.monotonic() - started
    done = asyncio.run(count_succeeded(dsn))
    print(
        f"{workers} worker(s): {done} of {jobs} jobs in {secs:.1f} s: {done / secs:>6.0f} jobs/s "
        f"(procrastinate {version('procrastinate')}, concurrency {concurrency})"
    )
    if failed or done != jobs:
        sys.exit(f"the anchor did not drain its queue: {len(failed)} worker(s) failed, {done} of {jobs} succeeded")


if __name__ == "__main__":
    main()
