//! How the store calls its operations: `FCALL` of the library's functions
//! on servers with functions (Redis 7 and later), else `EVALSHA` of the
//! same bodies as scripts (`scripts.rs`).
//!
//! The store chooses once, when it opens: `FUNCTION LOAD` of its library
//! succeeds, or answers that the library exists (its name carries its
//! hash, so it is the same code), and calls go by `FCALL`; it answers that
//! `FUNCTION` is an unknown command (or one the user may not run), and
//! calls go by `EVALSHA`. A call whose function or script the server no
//! longer has (a restart without persistence, `FUNCTION FLUSH`, `SCRIPT
//! FLUSH`) loads it again on the same connection and runs once more.
//!
//! Node state: none (the call's command).

use redis::{
    Cmd, Connection, ErrorKind, FromRedisValue, RedisError, RedisResult, ServerErrorKind, Value,
};
use redis::{ToRedisArgs, cmd};

use super::replication::{self, Replicas, Replied};
use super::scripts::{Op, Scripts};

/// How the store's calls reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `FCALL` of the library's functions.
    Functions,
    /// `EVALSHA` of the scripts.
    Scripts,
}

/// One call being built: the command, its keys and then its arguments.
pub(crate) struct Call<'a> {
    op: &'a Op,
    mode: Mode,
    cmd: Cmd,
}

impl<'a> Call<'a> {
    /// A call of `op` with `keys`, its arguments to follow.
    pub(super) fn new(op: &'a Op, mode: Mode, keys: &[String]) -> Call<'a> {
        let mut c = match mode {
            Mode::Functions => cmd("FCALL").arg(&op.function).to_owned(),
            Mode::Scripts => cmd("EVALSHA").arg(op.script.get_hash()).to_owned(),
        };
        c.arg(keys.len()).arg(keys);
        Call { op, mode, cmd: c }
    }

    /// Appends an argument (ARGV's next).
    pub(crate) fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Call<'a> {
        self.cmd.arg(arg);
        self
    }

    /// Runs the call, followed in the same round trip by `WAIT` when
    /// `wait` asks for replicas; when the server no longer has its
    /// function or script, loads it and runs it once more.
    pub(super) fn invoke<T: FromRedisValue>(
        &self,
        c: &mut Connection,
        scripts: &Scripts,
        wait: Option<Replicas>,
    ) -> RedisResult<Replied<T>> {
        match replication::query(&self.cmd, wait, c) {
            Err(e) if self.missing(&e) => {
                self.load(c, scripts)?;
                replication::query(&self.cmd, wait, c)
            }
            answer => answer,
        }
    }

    /// The command, for a caller that pipelines several calls.
    pub(super) fn cmd(&self) -> &Cmd {
        &self.cmd
    }

    /// Whether `e` says the server lacks this call's function or script.
    pub(super) fn missing(&self, e: &RedisError) -> bool {
        missing(e, self.mode)
    }

    /// Loads what this call runs: the whole library, or its one script.
    pub(super) fn load(&self, c: &mut Connection, scripts: &Scripts) -> RedisResult<()> {
        match self.mode {
            Mode::Functions => load_library(c, scripts).map(|_| ()),
            Mode::Scripts => cmd("SCRIPT")
                .arg("LOAD")
                .arg(self.op.text())
                .query::<String>(c)
                .map(|_| ()),
        }
    }

    /// Whether this call's [`Call::load`] loads the whole library (one
    /// load serves every call of the store).
    pub(super) fn loads_library(&self) -> bool {
        self.mode == Mode::Functions
    }
}

/// Whether `entry`, one library of `FUNCTION LIST`'s answer (field names
/// and values in turn), is the library `name` (LIBRARYNAME matches by
/// pattern, so the name is compared here).
fn names_library(entry: &Value, name: &str) -> bool {
    let Value::Array(fields) = entry else {
        return false;
    };
    fields.chunks(2).any(|f| match f {
        [Value::BulkString(k), Value::BulkString(v)] => {
            k.as_slice() == b"library_name" && v.as_slice() == name.as_bytes()
        }
        _ => false,
    })
}

/// Whether `e` says the server lacks the call's function or script.
fn missing(e: &RedisError, mode: Mode) -> bool {
    match mode {
        Mode::Scripts => e.kind() == ErrorKind::Server(ServerErrorKind::NoScript),
        Mode::Functions => {
            e.kind() == ErrorKind::Server(ServerErrorKind::ResponseError)
                && e.detail() == Some("Function not found")
        }
    }
}

/// Loads the library: [`Mode::Functions`] once the server has it (now or
/// already: the same name is the same code), [`Mode::Scripts`] when it
/// has no functions or the user may not load them. Any other error (the
/// connection's) is the caller's to handle.
pub(super) fn load_library(c: &mut Connection, scripts: &Scripts) -> RedisResult<Mode> {
    let loaded = cmd("FUNCTION")
        .arg("LOAD")
        .arg(&scripts.library)
        .query::<String>(c);
    match loaded {
        Ok(_) => Ok(Mode::Functions),
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoPerm) => Ok(Mode::Scripts),
        // A read-only replica loads nothing, but has the library when its
        // master does: functions replicate.
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly) => {
            let listed: Vec<Value> = cmd("FUNCTION")
                .arg("LIST")
                .arg("LIBRARYNAME")
                .arg(&scripts.library_name)
                .query(c)?;
            let has = listed
                .iter()
                .any(|l| names_library(l, &scripts.library_name));
            Ok(if has { Mode::Functions } else { Mode::Scripts })
        }
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::ResponseError) => {
            let detail = e.detail().unwrap_or("");
            if detail.starts_with("unknown command") {
                Ok(Mode::Scripts)
            } else if detail == format!("Library '{}' already exists", scripts.library_name) {
                Ok(Mode::Functions)
            } else {
                Err(e)
            }
        }
        Err(e) => Err(e),
    }
}
