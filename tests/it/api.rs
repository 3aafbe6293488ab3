//! The read-only API, the dashboard in a real browser, and `gangway check`.

mod check;
mod dashboard;
mod endpoints;
mod scale;
