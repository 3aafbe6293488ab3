//! The view pieces every object of the API shares, whatever its
//! protocol: its status, its problems as messages and as typed values.
//! The HTTP, TCP and UDP views all build on them; nothing here imports
//! those views.

use crate::config::problem::{ConfigError, ObjectRef, Problem};
use crate::config::provenance::{FileLocation, Source, StoreKeys};
use crate::runtime::{ObjectReport, Status};
use serde::Serialize;

/// One problem of an object (or of the configuration as a whole), as the
/// API shows it. Every error the API reports is rendered here, so a richer
/// error (with where it came from) changes this one type.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct ErrorView(String);

impl ErrorView {
    /// The errors of one object's report, each led by where it is written.
    pub fn of_report(report: &ObjectReport) -> Vec<ErrorView> {
        report
            .errors
            .iter()
            .map(|e| ErrorView(e.to_string()))
            .collect()
    }

    /// A list of messages.
    pub fn all(messages: &[String]) -> Vec<ErrorView> {
        messages.iter().map(|e| ErrorView(e.clone())).collect()
    }
}

/// One problem of an object as the API gives it: what is wrong (without
/// the place) beside the typed fields — kind, object, option and `origin`
/// (file and line, or container and label).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ProblemView {
    /// The problem alone, without where it is written.
    pub message: String,
    /// The typed error.
    #[serde(flatten)]
    pub error: ConfigError,
}

impl ProblemView {
    /// The typed problems of a list of errors.
    pub fn all(errors: &[ConfigError]) -> Vec<ProblemView> {
        errors
            .iter()
            .map(|error| ProblemView {
                message: error.problem.to_string(),
                error: error.clone(),
            })
            .collect()
    }
}

/// The fields every router, service and middleware has besides its
/// configuration: status, problems and where it comes from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateView {
    /// `enabled`, `warning` or `disabled`.
    pub status: Status,
    /// What is wrong, one entry per problem (Traefik's `error`).
    #[serde(rename = "error", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorView>,
    /// The containers and labels behind the object, when its provider knows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<Source>,
    /// The store keys the object is written in, for KV providers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<StoreKeys>,
    /// The file and line it is written at, for the file provider
    /// (gangway's addition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileLocation>,
    /// For an object its provider left out because it does not read: the
    /// values that were read, as written (gangway's addition). Its other
    /// fields then hold only what was read, never defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<serde_json::Value>,
    /// The same problems as typed values: what is wrong (without the
    /// place), its kind, the object, the option and where it is written
    /// (`origin`: file and line, or container and label).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<ProblemView>,
}

impl StateView {
    pub(super) fn of(report: Option<&ObjectReport>) -> Self {
        report.map_or(
            StateView {
                status: Status::Enabled,
                errors: Vec::new(),
                problems: Vec::new(),
                provenance: Vec::new(),
                keys: None,
                file: None,
                read: None,
            },
            |r| StateView {
                status: r.status,
                errors: ErrorView::of_report(r),
                problems: ProblemView::all(&r.errors),
                provenance: r.provenance.clone(),
                keys: r.keys.clone(),
                file: r.file.clone(),
                read: r.read.clone(),
            },
        )
    }
}

impl StateView {
    /// Adds a problem seen now (a server down) rather than when the
    /// configuration was compiled; `disables` makes it an error, otherwise
    /// a warning. A status is only ever raised.
    pub(super) fn live_problem(&mut self, object: ObjectRef, problem: Problem, disables: bool) {
        let error = ConfigError::new(object, problem);
        self.status = match (self.status, disables) {
            (_, true) | (Status::Disabled, _) => Status::Disabled,
            _ => Status::Warning,
        };
        self.errors.push(ErrorView(error.to_string()));
        self.problems.push(ProblemView {
            message: error.problem.to_string(),
            error,
        });
    }
}
