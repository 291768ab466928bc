//! Who may drive `rein app-server --listen ws://…` and `rein serve`: a bearer token unless
//! the user says otherwise. By default the token is rein's own, generated on first start
//! into `$REIN_HOME` (`app-server-ws-token`, `serve-token`; mode 0600) and kept for later
//! starts, so a client configured once keeps working; a token file flag names another;
//! `--no-auth` (the WebSocket listener only) drops it, on loopback only (any local
//! process, and any web page that slipped past the Origin and Host checks, could otherwise
//! drive the server, which runs commands).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// Where rein's own token is kept, under its home.
const TOKEN_FILE: &str = "app-server-ws-token";

/// How clients authenticate, as the command line chose.
pub enum WsAuth {
    /// Clients send this token; it is read from (or was just written to) `file`.
    Token {
        token: String,
        file: PathBuf,
        generated: bool,
    },
    /// `--no-auth` on loopback.
    None,
}

impl WsAuth {
    pub fn token(&self) -> Option<String> {
        match self {
            WsAuth::Token { token, .. } => Some(token.clone()),
            WsAuth::None => None,
        }
    }

    /// What stderr says once the server listens at `url`.
    pub fn announce(&self, url: &str) -> String {
        match self {
            WsAuth::Token {
                token,
                file,
                generated: true,
            } => format!(
                "rein: listening on {url}; clients must send `Authorization: Bearer {token}` \
                 (rein's token, kept in {})",
                file.display()
            ),
            WsAuth::Token { file, .. } => format!(
                "rein: listening on {url}; clients must send `Authorization: Bearer <the token in {}>`",
                file.display()
            ),
            WsAuth::None => format!(
                "rein: listening on {url} WITHOUT authentication (--no-auth): any local process can drive this server"
            ),
        }
    }
}

/// The authentication for a listener on `addr`.
pub fn resolve(
    addr: SocketAddr,
    home: &Path,
    token_file: Option<&Path>,
    no_auth: bool,
) -> anyhow::Result<WsAuth> {
    resolve_named(addr, home, token_file, no_auth, TOKEN_FILE)
}

/// The same for a listener whose own token is kept in `$REIN_HOME/<own_file>` (each
/// listener kind has its own, so revoking one leaves the others).
pub fn resolve_named(
    addr: SocketAddr,
    home: &Path,
    token_file: Option<&Path>,
    no_auth: bool,
    own_file: &str,
) -> anyhow::Result<WsAuth> {
    if no_auth {
        if token_file.is_some() {
            bail!("--no-auth and --ws-token-file contradict each other: give one");
        }
        if !addr.ip().to_canonical().is_loopback() {
            bail!("--no-auth is refused on {addr}: beyond loopback a token is required");
        }
        return Ok(WsAuth::None);
    }
    if let Some(file) = token_file {
        let token = read_token(file)?;
        return Ok(WsAuth::Token {
            token,
            file: file.to_owned(),
            generated: false,
        });
    }
    let file = home.join(own_file);
    let token = own_token(&file)?;
    Ok(WsAuth::Token {
        token,
        file,
        generated: true,
    })
}

fn read_token(file: &Path) -> anyhow::Result<String> {
    let token = std::fs::read_to_string(file)
        .with_context(|| format!("reading the token file {}", file.display()))?
        .trim()
        .to_owned();
    if token.is_empty() {
        bail!("the token file {} is empty", file.display());
    }
    Ok(token)
}

/// rein's own token at `file`: read if it is there (and private), else created.
fn own_token(file: &Path) -> anyhow::Result<String> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let token = fresh_token()?;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file);
    match created {
        Ok(mut f) => {
            f.write_all(format!("{token}\n").as_bytes())
                .with_context(|| format!("writing {}", file.display()))?;
            return Ok(token);
        }
        // Made by an earlier start (or a concurrent one).
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", file.display())),
    }
    let meta = std::fs::metadata(file).with_context(|| format!("reading {}", file.display()))?;
    if meta.mode() & 0o077 != 0 {
        bail!(
            "{} is readable by others (mode {:o}): `chmod 600` it, or delete it for a new token",
            file.display(),
            meta.mode() & 0o777
        );
    }
    read_token(file)
}

/// 32 random bytes, hex.
fn fresh_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for a token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
