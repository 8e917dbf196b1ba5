//! The one typed error of the notes library. Every refusal has a stable [`NoteError::code`];
//! filesystem failures keep their cause for the CLI's stderr line but never leak paths into
//! the refusal message.

use std::io;

use crate::envelope::{DomainError, ErrorClass, Refusal};

/// What went wrong, as a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    AlreadyExists,
    AmbiguousEdit,
    NoMatch,
    NothingToDo,
    TooLarge,
    InvalidScope,
    InvalidOrigin,
    InvalidAddress,
    InvalidPattern,
    InvalidQuery,
    InvalidOffset,
    /// A bare (session) address or a session-scoped query without a session id.
    NoSession,
    /// A path inside a home that resolves (through a symlink) outside the notes root.
    PathEscapesRoot,
    OutputTooLarge,
    Io,
}

impl ErrorKind {
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::AmbiguousEdit => "ambiguous_edit",
            ErrorKind::NoMatch => "no_match",
            ErrorKind::NothingToDo => "nothing_to_do",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::InvalidScope => "invalid_scope",
            ErrorKind::InvalidOrigin => "invalid_origin",
            ErrorKind::InvalidAddress => "invalid_address",
            ErrorKind::InvalidPattern => "invalid_pattern",
            ErrorKind::InvalidQuery => "invalid_query",
            ErrorKind::InvalidOffset => "invalid_offset",
            ErrorKind::NoSession => "no_session",
            ErrorKind::PathEscapesRoot => "path_escapes_root",
            ErrorKind::OutputTooLarge => "output_too_large",
            ErrorKind::Io => "io_error",
        }
    }

    /// Every notes refusal is the caller's to fix, except a failing filesystem.
    pub fn class(self) -> ErrorClass {
        match self {
            ErrorKind::Io => ErrorClass::Internal,
            _ => ErrorClass::Refused,
        }
    }
}

/// A refusal or failure of a notes operation. Its `Display` is `<code>: <message>`; the cause
/// of an `io_error` is its [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", kind.code())]
pub struct NoteError {
    pub kind: ErrorKind,
    pub message: String,
    /// For `ambiguous_edit`: the 1-based line of every occurrence.
    pub line_numbers: Vec<usize>,
    /// For edit failures: the index of the failing edit.
    pub edit_index: Option<usize>,
    /// For `output_too_large` and similar: structured facts.
    pub details: Option<Box<serde_json::Value>>,
    /// For `io_error`: the underlying cause (kept out of the refusal message).
    #[source]
    pub source: Option<io::Error>,
}

impl NoteError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        NoteError {
            kind,
            message: message.into(),
            line_numbers: Vec::new(),
            edit_index: None,
            details: None,
            source: None,
        }
    }

    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    pub fn io(source: io::Error) -> Self {
        NoteError {
            source: Some(source),
            ..NoteError::new(ErrorKind::Io, "notes operation failed")
        }
    }

    pub(crate) fn with_edit(mut self, index: usize) -> Self {
        self.edit_index = Some(index);
        self
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }
}

impl DomainError for NoteError {
    fn code(&self) -> &'static str {
        self.kind.code()
    }

    fn class(&self) -> ErrorClass {
        self.kind.class()
    }

    fn to_refusal(&self) -> Refusal {
        let (code, message, details) = super::wire::refusal_parts(self);
        Refusal::new(code, message, details)
    }
}

impl From<io::Error> for NoteError {
    fn from(e: io::Error) -> Self {
        NoteError::io(e)
    }
}

pub(crate) fn err(kind: ErrorKind, message: impl Into<String>) -> NoteError {
    NoteError::new(kind, message)
}
