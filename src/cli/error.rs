//! Typed command errors (after jj's `CommandError`). A handler returns
//! `Result<Reply, CmdError>` (or [`Answer`]) and uses `?`: every domain error converts into a
//! [`CmdError`] through its [`DomainError`] impl, which names the stable code and the
//! [`ErrorClass`] next to each variant; this module is the one place that turns a class into
//! an exit code ([`exit_of`]) and the one place that prints a command's outcome ([`finish`]).

use std::error::Error as StdError;
use std::fmt;

use super::common::{Exit, MAX_REQUEST_BYTES, emit};
use super::{Ctx, Io};
use crate::envelope::{DomainError, ErrorClass, Refusal, Reply};

/// The exit code of a refusal class (`docs/protocol.md`, exit codes).
pub fn exit_of(class: ErrorClass) -> Exit {
    match class {
        ErrorClass::Usage => Exit::Usage,
        ErrorClass::Refused => Exit::Refused,
        ErrorClass::Internal => Exit::Internal,
        ErrorClass::Busy => Exit::LockHeld,
        ErrorClass::Unavailable => Exit::Unavailable,
    }
}

/// What a command that succeeded hands back to be printed.
#[derive(Debug)]
pub enum Answer {
    /// One envelope on stdout, and the exit code of this success: 0, or 1 for a success that
    /// still reports trouble (`doctor` with issues found).
    Reply(Reply, Exit),
    /// The command wrote its own output (a completion script, a host's hook protocol, a
    /// server session) and ends with this exit code.
    Written(Exit),
}

impl From<Reply> for Answer {
    fn from(reply: Reply) -> Self {
        Answer::Reply(reply, Exit::Ok)
    }
}

/// A command that did not succeed: a typed refusal printed as the `ok:false` envelope with
/// the exit code of its class, or a failure that escaped the command (a closed stdout, a
/// host fault), which the process entry point reports as `internal` (exit 70).
pub struct CmdError(Box<Repr>);

enum Repr {
    Refusal {
        class: ErrorClass,
        refusal: Refusal,
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    Escaped(anyhow::Error),
}

impl CmdError {
    /// A refusal of `class` with no typed cause behind it.
    pub fn new(class: ErrorClass, refusal: Refusal) -> Self {
        CmdError(Box::new(Repr::Refusal {
            class,
            refusal,
            source: None,
        }))
    }

    /// A domain error printed with a refusal the command built itself (extra details), its
    /// class and cause still the error's.
    pub fn with_refusal(error: impl DomainError, refusal: Refusal) -> Self {
        CmdError(Box::new(Repr::Refusal {
            class: error.class(),
            refusal,
            source: Some(Box::new(error)),
        }))
    }

    /// The refusal this error prints (`None` for an escaped failure).
    pub fn refusal(&self) -> Option<&Refusal> {
        match self.0.as_ref() {
            Repr::Refusal { refusal, .. } => Some(refusal),
            Repr::Escaped(_) => None,
        }
    }

    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self.0.as_ref() {
            Repr::Refusal { class, .. } => exit_of(*class),
            Repr::Escaped(_) => Exit::Internal,
        }
    }
}

impl<E: DomainError> From<E> for CmdError {
    fn from(error: E) -> Self {
        let refusal = error.to_refusal();
        CmdError::with_refusal(error, refusal)
    }
}

impl From<anyhow::Error> for CmdError {
    fn from(error: anyhow::Error) -> Self {
        CmdError(Box::new(Repr::Escaped(error)))
    }
}

impl From<std::io::Error> for CmdError {
    fn from(error: std::io::Error) -> Self {
        CmdError(Box::new(Repr::Escaped(error.into())))
    }
}

impl From<serde_json::Error> for CmdError {
    fn from(error: serde_json::Error) -> Self {
        CmdError(Box::new(Repr::Escaped(error.into())))
    }
}

impl fmt::Debug for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_ref() {
            Repr::Refusal {
                class,
                refusal,
                source,
            } => f
                .debug_struct("CmdError")
                .field("class", class)
                .field("refusal", refusal)
                .field("source", source)
                .finish(),
            Repr::Escaped(error) => f.debug_tuple("CmdError::Escaped").field(error).finish(),
        }
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_ref() {
            Repr::Refusal { refusal, .. } => write!(f, "{}: {}", refusal.code, refusal.message),
            Repr::Escaped(error) => write!(f, "{error:#}"),
        }
    }
}

impl StdError for CmdError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self.0.as_ref() {
            Repr::Refusal { source, .. } => {
                source.as_deref().map(|e| e as &(dyn StdError + 'static))
            }
            Repr::Escaped(error) => Some(error.as_ref()),
        }
    }
}

/// The refusals the command layer gives itself, before any domain runs: the request on stdin.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Malformed, or outside its schema's bounds: `invalid_request`; the message is whole.
    #[error("{0}")]
    Invalid(String),
    /// Larger than [`MAX_REQUEST_BYTES`]: `too_large`.
    #[error("the request exceeds {MAX_REQUEST_BYTES} bytes: refused without reading the rest")]
    TooLarge,
}

impl RequestError {
    /// `invalid_request` with the shared "invalid request: " opening before `problem`.
    pub fn invalid(problem: impl fmt::Display) -> Self {
        RequestError::Invalid(format!("invalid request: {problem}"))
    }
}

impl DomainError for RequestError {
    fn code(&self) -> &'static str {
        match self {
            RequestError::Invalid(_) => "invalid_request",
            RequestError::TooLarge => "too_large",
        }
    }

    /// A malformed request is a usage error; one too large to read is refused.
    fn class(&self) -> ErrorClass {
        match self {
            RequestError::Invalid(_) => ErrorClass::Usage,
            RequestError::TooLarge => ErrorClass::Refused,
        }
    }

    fn to_refusal(&self) -> Refusal {
        let details = match self {
            RequestError::Invalid(_) => None,
            RequestError::TooLarge => Some(serde_json::json!({"max_bytes": MAX_REQUEST_BYTES})),
        };
        Refusal::new(self.code(), self.to_string(), details)
    }
}

/// A failure that escaped a command (`internal`, exit 70): what `cli::main` and the MCP server
/// print when a handler could not finish; the message is the whole cause chain.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Internal(pub String);

impl DomainError for Internal {
    fn code(&self) -> &'static str {
        "internal"
    }

    fn class(&self) -> ErrorClass {
        ErrorClass::Internal
    }
}

/// `invalid_request` (exit 2) for a request that parsed but breaks its schema's bounds;
/// `problem` is what is wrong, after the shared "invalid request: " opening.
pub fn invalid_request(problem: impl fmt::Display) -> CmdError {
    RequestError::invalid(problem).into()
}

/// Print a command's outcome and give its exit code: the one place a command's result is
/// written. A refusal of class [`ErrorClass::Internal`] also gets one stderr line: its
/// message, then its cause when the message does not already say it. An escaped failure is
/// returned as it is, for the entry point to report.
pub fn finish(outcome: Result<Answer, CmdError>, ctx: &Ctx, io: &mut Io) -> anyhow::Result<Exit> {
    let error = match outcome {
        Ok(Answer::Written(exit)) => return Ok(exit),
        Ok(Answer::Reply(reply, exit)) => {
            emit(&reply, ctx, io)?;
            return Ok(exit);
        }
        Err(CmdError(error)) => *error,
    };
    match error {
        Repr::Escaped(error) => Err(error),
        Repr::Refusal {
            class,
            refusal,
            source,
        } => {
            let stderr_line = (class == ErrorClass::Internal).then(|| {
                let cause = source
                    .as_deref()
                    .and_then(StdError::source)
                    .map(ToString::to_string)
                    .filter(|cause| !refusal.message.contains(cause.as_str()));
                match cause {
                    Some(cause) => format!("error: {}: {cause}", refusal.message),
                    None => format!("error: {}", refusal.message),
                }
            });
            emit(&Reply::refused(refusal), ctx, io)?;
            if let Some(line) = stderr_line {
                writeln!(io.stderr, "{line}")?;
            }
            Ok(exit_of(class))
        }
    }
}
