//! Encryption of secret settings at rest: ChaCha20-Poly1305 with a 256-bit
//! master key from `CAPSTAN_MASTER_KEY` (base64 or hex), or else from
//! `<data-dir>/master.key`, created with mode 0600 on first use. The setting's
//! key is the associated data, so a ciphertext copied to another setting
//! does not decrypt. Plaintext never goes to a log.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

/// The environment variable that supplies the master key.
pub const MASTER_KEY_ENV: &str = "CAPSTAN_MASTER_KEY";
const PREFIX: &str = "enc:v1:";

/// Why the master key could not be had, or a secret not decrypted.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{MASTER_KEY_ENV} must be 32 bytes, as 44 base64 characters or 64 hex digits")]
    BadEnvKey,
    #[error("master key file {0}: {1}")]
    KeyFile(PathBuf, String),
    #[error("secret {0} cannot be decrypted with this master key")]
    Undecryptable(String),
}

/// The key secrets are encrypted with.
#[derive(Clone)]
pub struct MasterKey(Key);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

fn decode_key(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    let bytes = if text.len() == 64 { hex::decode(text).ok()? } else { B64.decode(text).ok()? };
    bytes.try_into().ok()
}

impl MasterKey {
    /// A key written as 44 base64 characters or 64 hex digits.
    pub fn from_text(text: &str) -> Result<MasterKey, SecretError> {
        decode_key(text).map(|k| MasterKey(k.into())).ok_or(SecretError::BadEnvKey)
    }

    /// The key from the environment, else the data directory's key file
    /// (created on first use).
    pub fn load(data_dir: &Path) -> Result<MasterKey, SecretError> {
        if let Ok(text) = std::env::var(MASTER_KEY_ENV) {
            return MasterKey::from_text(&text);
        }
        let path = data_dir.join("master.key");
        let err = |e: &dyn std::fmt::Display| SecretError::KeyFile(path.clone(), e.to_string());
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                check_private(&path).map_err(|e| err(&e))?;
                decode_key(&text).map(|k| MasterKey(k.into())).ok_or_else(|| err(&"is not a base64 256-bit key"))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data_dir).map_err(|e| err(&e))?;
                let key = ChaCha20Poly1305::generate_key(&mut OsRng);
                let mut file = create_private(&path).map_err(|e| err(&e))?;
                file.write_all(B64.encode(key).as_bytes()).and_then(|_| file.sync_all()).map_err(|e| err(&e))?;
                Ok(MasterKey(key))
            }
            Err(e) => Err(err(&e)),
        }
    }

    /// `enc:v1:<base64 nonce and ciphertext>`, bound to `name`.
    pub(crate) fn encrypt(&self, name: &str, plaintext: &str) -> String {
        let cipher = ChaCha20Poly1305::new(&self.0);
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(&nonce, Payload { msg: plaintext.as_bytes(), aad: name.as_bytes() })
            .expect("encrypting a short message cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{PREFIX}{}", B64.encode(out))
    }

    /// The plaintext of a value [`encrypt`](Self::encrypt) produced for `name`.
    pub fn decrypt(&self, name: &str, stored: &str) -> Result<String, SecretError> {
        let bad = || SecretError::Undecryptable(name.to_string());
        let bytes = B64.decode(stored.strip_prefix(PREFIX).ok_or_else(bad)?).map_err(|_| bad())?;
        if bytes.len() < 12 {
            return Err(bad());
        }
        let (nonce, sealed) = bytes.split_at(12);
        let plain = ChaCha20Poly1305::new(&self.0)
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: name.as_bytes() })
            .map_err(|_| bad())?;
        String::from_utf8(plain).map_err(|_| bad())
    }
}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)
}

/// A key file others can read is refused rather than trusted.
#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_err(|e| e.to_string())?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!("is readable by others (mode {:o}); run chmod 600 on it", mode & 0o777));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), String> {
    Ok(())
}
