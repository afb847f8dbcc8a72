//! How often sign-in may be tried: per client address and per account
//! name. A client's first [`CLIENT_FREE`] failures cost it nothing; each
//! later one pauses it for twice as long as the last (1 s, 2 s, 4 s, … up
//! to [`LONGEST_PAUSE`]). An account that has failed [`ACCOUNT_FREE`]
//! times, from anywhere, is paused in the same way for every client that
//! has failed on it, but never for a client that has not: the real
//! administrator, signing in from a machine that has not been guessing,
//! always gets a try, so an attacker can slow the account down but not
//! lock its owner out. Attempts are counted when they start, so a burst
//! of concurrent guesses gets no more tries than a sequence would.
//! A success clears the client and the account. What is remembered is
//! bounded ([`MAX_RECORDS`] of each kind) and forgotten after
//! [`FORGET_AFTER`] without a failure.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures a client may make before it is paused.
pub const CLIENT_FREE: u32 = 5;
/// Failures on one account, from every client, before it is paused for
/// the clients that failed.
pub(crate) const ACCOUNT_FREE: u32 = 20;
/// The longest pause.
pub(crate) const LONGEST_PAUSE: Duration = Duration::from_secs(15 * 60);
/// Failures older than this, with none since, are forgotten.
pub(crate) const FORGET_AFTER: Duration = Duration::from_secs(60 * 60);
/// Records kept of each kind; past it the stalest is dropped.
pub(crate) const MAX_RECORDS: usize = 10_000;

/// Where a sign-in comes from: an IPv4 address, or an IPv6 address's
/// /64 network (one machine commonly holds a whole /64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClientKey(u128);

impl ClientKey {
    pub fn of(ip: IpAddr) -> ClientKey {
        match ip {
            IpAddr::V4(v4) => ClientKey(u32::from(v4) as u128),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey(u32::from(v4) as u128),
                None => ClientKey((u128::from(v6) & !((1u128 << 64) - 1)) | (1u128 << 127)),
            },
        }
    }
}

#[derive(Debug, Default)]
struct Record {
    failures: u32,
    in_flight: u32,
    paused_until: Option<Instant>,
    last: Option<Instant>,
}

impl Record {
    fn paused(&self, now: Instant) -> Option<Duration> {
        self.paused_until.filter(|until| *until > now).map(|until| until - now)
    }

    fn stale(&self, now: Instant) -> bool {
        self.in_flight == 0 && self.last.is_none_or(|last| now.duration_since(last) > FORGET_AFTER)
    }
}

/// Whether an attempt may go ahead.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ThrottleVerdict {
    /// It may; report how it went with [`Throttle::finished`].
    Go,
    /// Not now: try again after this long.
    Wait(Duration),
}

/// A pause that a failure has just begun, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Paused {
    Client { failures: u32, pause: Duration },
    Account { failures: u32, pause: Duration },
}

#[derive(Default)]
struct Records {
    clients: HashMap<ClientKey, Record>,
    accounts: HashMap<String, Record>,
}

/// Sign-in attempts remembered by this process.
#[derive(Default)]
pub(crate) struct Throttle {
    records: Mutex<Records>,
}

impl Throttle {
    /// Whether `client` may try to sign in as `account` now; a `Go` counts
    /// as an attempt in flight until [`Throttle::finished`].
    pub fn attempt(&self, client: ClientKey, account: &str, now: Instant) -> ThrottleVerdict {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let Records { clients, accounts } = &mut *records;
        let clean = clients.get(&client).is_none_or(|c| c.failures == 0 && c.in_flight == 0);
        let client_record = entry(clients, client, now);
        if let Some(wait) = client_record.paused(now) {
            return ThrottleVerdict::Wait(wait);
        }
        let left = CLIENT_FREE.saturating_sub(client_record.failures).max(1);
        if client_record.in_flight >= left {
            return ThrottleVerdict::Wait(Duration::from_secs(1));
        }
        let account_paused = accounts.get(account).and_then(|a| a.paused(now));
        if let Some(wait) = account_paused.filter(|_| !clean) {
            return ThrottleVerdict::Wait(wait);
        }
        client_record.in_flight += 1;
        entry(accounts, account.to_string(), now).in_flight += 1;
        ThrottleVerdict::Go
    }

    /// How an attempt that was let go ended; the pauses it began, if any.
    pub fn finished(&self, client: ClientKey, account: &str, succeeded: bool, now: Instant) -> Vec<Paused> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let Records { clients, accounts } = &mut *records;
        let mut paused = Vec::new();
        if succeeded {
            clients.remove(&client);
            if let Some(a) = accounts.get_mut(account) {
                *a = Record { in_flight: a.in_flight.saturating_sub(1), ..Record::default() };
            }
            return paused;
        }
        let c = entry(clients, client, now);
        c.in_flight = c.in_flight.saturating_sub(1);
        if let Some(pause) = fail(c, CLIENT_FREE, now) {
            paused.push(Paused::Client { failures: c.failures, pause });
        }
        let a = entry(accounts, account.to_string(), now);
        a.in_flight = a.in_flight.saturating_sub(1);
        if let Some(pause) = fail(a, ACCOUNT_FREE, now) {
            paused.push(Paused::Account { failures: a.failures, pause });
        }
        paused
    }

    /// An attempt that was let go but never checked (the host was busy).
    pub fn abandoned(&self, client: ClientKey, account: &str) {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = records.clients.get_mut(&client) {
            c.in_flight = c.in_flight.saturating_sub(1);
        }
        if let Some(a) = records.accounts.get_mut(account) {
            a.in_flight = a.in_flight.saturating_sub(1);
        }
    }
}

/// Counts a failure; past `free` of them, starts a pause twice as long as
/// the last.
fn fail(record: &mut Record, free: u32, now: Instant) -> Option<Duration> {
    record.failures = record.failures.saturating_add(1);
    record.last = Some(now);
    let over = record.failures.checked_sub(free + 1)?;
    let pause = Duration::from_secs(1u64 << over.min(20)).min(LONGEST_PAUSE);
    record.paused_until = Some(now + pause);
    Some(pause)
}

/// The record for `key`, made fresh when missing or stale; the map never
/// grows past [`MAX_RECORDS`].
fn entry<K: Hash + Eq + Clone>(map: &mut HashMap<K, Record>, key: K, now: Instant) -> &mut Record {
    if !map.contains_key(&key) && map.len() >= MAX_RECORDS {
        map.retain(|_, r| !r.stale(now));
        if map.len() >= MAX_RECORDS {
            // Every record is recent: drop the one idle longest.
            let stalest =
                map.iter().filter(|(_, r)| r.in_flight == 0).min_by_key(|(_, r)| r.last).map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                map.remove(&k);
            }
        }
    }
    let record = map.entry(key).or_default();
    if record.stale(now) && record.last.is_some() {
        *record = Record::default();
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(n: u8) -> ClientKey {
        ClientKey::of(IpAddr::from([192, 0, 2, n]))
    }

    fn fail_once(t: &Throttle, c: ClientKey, account: &str, now: Instant) -> Vec<Paused> {
        assert_eq!(t.attempt(c, account, now), ThrottleVerdict::Go);
        t.finished(c, account, false, now)
    }

    #[test]
    fn a_client_is_paused_for_longer_after_each_failure_past_its_free_ones() {
        let t = Throttle::default();
        let now = Instant::now();
        for _ in 0..CLIENT_FREE {
            assert!(fail_once(&t, client(1), "admin", now).is_empty());
        }
        let paused = fail_once(&t, client(1), "admin", now);
        assert_eq!(paused, vec![Paused::Client { failures: CLIENT_FREE + 1, pause: Duration::from_secs(1) }]);
        assert_eq!(t.attempt(client(1), "admin", now), ThrottleVerdict::Wait(Duration::from_secs(1)));
        let later = now + Duration::from_secs(1);
        let paused = fail_once(&t, client(1), "admin", later);
        assert_eq!(paused, vec![Paused::Client { failures: CLIENT_FREE + 2, pause: Duration::from_secs(2) }]);
        // Another client is not held back by the first one's failures.
        assert_eq!(t.attempt(client(2), "admin", later), ThrottleVerdict::Go);
    }

    #[test]
    fn concurrent_attempts_get_no_more_tries_than_a_sequence() {
        let t = Throttle::default();
        let now = Instant::now();
        let went = (0..50).filter(|_| t.attempt(client(1), "admin", now) == ThrottleVerdict::Go).count();
        assert_eq!(went, CLIENT_FREE as usize);
    }

    #[test]
    fn a_paused_account_still_lets_a_client_that_has_not_failed_try() {
        let t = Throttle::default();
        let now = Instant::now();
        let mut account_paused = false;
        for n in 0..=ACCOUNT_FREE {
            let paused = fail_once(&t, client(n as u8), "admin", now);
            account_paused |= paused.iter().any(|p| matches!(p, Paused::Account { .. }));
        }
        assert!(account_paused);
        // A client that failed waits; a fresh one may try, and its success
        // clears the account.
        assert!(matches!(t.attempt(client(0), "admin", now), ThrottleVerdict::Wait(_)));
        assert_eq!(t.attempt(client(200), "admin", now), ThrottleVerdict::Go);
        assert!(t.finished(client(200), "admin", true, now).is_empty());
        assert_eq!(t.attempt(client(0), "admin", now), ThrottleVerdict::Go);
    }

    #[test]
    fn failures_are_forgotten_and_memory_is_bounded() {
        let t = Throttle::default();
        let now = Instant::now();
        for _ in 0..=CLIENT_FREE {
            fail_once(&t, client(1), "admin", now);
        }
        let much_later = now + FORGET_AFTER + Duration::from_secs(1);
        assert_eq!(t.attempt(client(1), "admin", much_later), ThrottleVerdict::Go);
        for n in 0..(MAX_RECORDS + 50) {
            let c = ClientKey::of(IpAddr::from([10, (n >> 16) as u8, (n >> 8) as u8, n as u8]));
            fail_once(&t, c, &format!("name{n}"), now);
        }
        let records = t.records.lock().unwrap();
        assert!(records.clients.len() <= MAX_RECORDS && records.accounts.len() <= MAX_RECORDS);
    }

    #[test]
    fn an_ipv6_client_is_its_64_network() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(ClientKey::of(a), ClientKey::of(b));
        assert_ne!(ClientKey::of(a), ClientKey::of(c));
        assert_eq!(ClientKey::of("::ffff:192.0.2.1".parse().unwrap()), client(1));
    }
}
