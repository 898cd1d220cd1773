//! People sessions as data: the lifecycle record `.agent-toolkit/sessions/<id>.json`, its
//! status machine, session ids, timestamps as text, the listing order and reconciliation
//! of records whose process is gone.
//!
//! Pure on purpose. The driver reads the clock, the process table (`pid` and its start
//! time) and the files, and passes them in; this module compares and decides. It holds no
//! field for the one-time task of a start, so the task cannot reach a record. Findings
//! about a record never carry a value from it.

use crate::finding;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::model::Isolation;
use super::tree::Tree;
use super::workspace::SourceFile;
use super::{is_reference, is_slug, json};
use crate::Diagnostic;

/// The spec string of a session record. The contract names the fields but no spec
/// string; the record also carries `pid` and `pid_start`, which are this project's, so the
/// name is this project's too.
pub(crate) const SESSION_SPEC: &str = "acompose/person-session@1";
/// Where session records live, relative to the workspace.
pub const SESSIONS_DIRECTORY: &str = ".agent-toolkit/sessions";
/// The `host` of a session run inside acompose's own tmux server.
pub const HOST_TMUX: &str = "tmux";
/// The largest record accepted, in bytes.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;
/// The most records a sessions folder may hold.
pub const MAX_RECORDS: usize = 512;
/// The longest session id.
pub(crate) const MAX_SESSION_ID_LENGTH: usize = 64;
/// The longest `cwd`, in bytes.
pub(crate) const MAX_CWD_BYTES: usize = 4096;
/// The longest Person name, in characters (as person@1 bounds it).
pub(crate) const MAX_PERSON_NAME_CHARACTERS: usize = 128;

// ---------------------------------------------------------------------------------------
// Status machine

/// Where a session is in its life. `Launching` and `Running` are active; the rest are
/// terminal and final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// The record is written; the runner has not been spawned yet.
    Launching,
    /// The runner was spawned and its pid recorded.
    Running,
    /// The runner exited with status 0.
    Completed,
    /// The runner exited with another status, or could not be spawned.
    Failed,
    /// The user stopped it (Ctrl-C or `people stop`).
    Stopped,
    /// `budget.max_seconds` ran out and the process group was ended.
    TimedOut,
    /// The runner's own usage records reached `budget.max_tokens` and the process group
    /// was ended.
    BudgetExceeded,
    /// Its process (or its launcher) vanished without a recorded outcome.
    Interrupted,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Launching,
        Status::Running,
        Status::Completed,
        Status::Failed,
        Status::Stopped,
        Status::TimedOut,
        Status::BudgetExceeded,
        Status::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Launching => "launching",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Stopped => "stopped",
            Status::TimedOut => "timed_out",
            Status::BudgetExceeded => "budget_exceeded",
            Status::Interrupted => "interrupted",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == text)
    }

    pub(crate) fn is_active(self) -> bool {
        matches!(self, Status::Launching | Status::Running)
    }

    pub fn is_terminal(self) -> bool {
        !self.is_active()
    }

    /// Whether the machine allows `self → to`. Terminal states allow nothing; a runner
    /// that never started can fail, be stopped or be interrupted, but cannot complete or
    /// time out (the time limit starts with the process).
    pub fn allows(self, to: Status) -> bool {
        match self {
            Status::Launching => matches!(to, Status::Running | Status::Failed | Status::Stopped | Status::Interrupted),
            Status::Running => matches!(
                to,
                Status::Completed
                    | Status::Failed
                    | Status::Stopped
                    | Status::TimedOut
                    | Status::BudgetExceeded
                    | Status::Interrupted
            ),
            Status::Completed
            | Status::Failed
            | Status::Stopped
            | Status::TimedOut
            | Status::BudgetExceeded
            | Status::Interrupted => false,
        }
    }

    /// The checked transition.
    pub(crate) fn transition(self, to: Status) -> Result<Status, SessionError> {
        if self.allows(to) { Ok(to) } else { Err(SessionError::ForbiddenTransition { from: self, to }) }
    }
}

/// Why a change to a record was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionError {
    ForbiddenTransition {
        from: Status,
        to: Status,
    },
    /// The end time given is earlier than `started_at`.
    EndsBeforeStart,
    /// A process id of 0 or a negative one.
    InvalidPid,
}

impl SessionError {
    pub fn message(self) -> &'static str {
        match self {
            SessionError::ForbiddenTransition { .. } => "the session status cannot change this way",
            SessionError::EndsBeforeStart => "the end time is earlier than the start time",
            SessionError::InvalidPid => "a process id must be a positive number",
        }
    }
}

// ---------------------------------------------------------------------------------------
// Timestamps

/// An RFC 3339 UTC time with whole seconds, exactly `YYYY-MM-DDTHH:MM:SSZ`. One fixed
/// width, so text order is time order. The driver reads the clock; the engine only
/// formats and compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(String);

impl Timestamp {
    /// Accepts exactly `YYYY-MM-DDTHH:MM:SSZ` naming a real calendar second (no leap
    /// seconds, no offsets, no fractions).
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 20 {
            return None;
        }
        let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'Z')];
        if separators.iter().any(|(index, byte)| bytes.get(*index) != Some(byte)) {
            return None;
        }
        let number = |start: usize, end: usize| -> Option<u32> {
            let digits = bytes.get(start..end)?;
            digits
                .iter()
                .try_fold(0u32, |total, byte| byte.is_ascii_digit().then(|| total * 10 + u32::from(byte - b'0')))
        };
        let year = number(0, 4)?;
        let month = number(5, 7)?;
        let day = number(8, 10)?;
        let hour = number(11, 13)?;
        let minute = number(14, 16)?;
        let second = number(17, 19)?;
        let valid = (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && hour < 24
            && minute < 60
            && second < 60;
        valid.then(|| Self(text.to_owned()))
    }

    /// The time `seconds` after 1970-01-01T00:00:00Z, for a driver that read the clock.
    /// Years past 9999 do not fit the format and are clamped to its last second.
    pub fn from_unix_seconds(seconds: u64) -> Self {
        const LAST: u64 = 253_402_300_799; // 9999-12-31T23:59:59Z
        let seconds = seconds.min(LAST);
        let days = seconds / 86_400;
        let of_day = seconds % 86_400;
        let (year, month, day) = civil_from_days(days);
        Self(format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            of_day / 3600,
            of_day % 3600 / 60,
            of_day % 60
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `YYYYMMDD-HHMMSS`, the time part of a session id.
    fn compact(&self) -> String {
        let text = &self.0;
        let pick = |range: std::ops::Range<usize>| text.get(range).unwrap_or_default();
        format!("{}{}{}-{}{}{}", pick(0..4), pick(5..7), pick(8..10), pick(11..13), pick(14..16), pick(17..19))
    }
}

fn is_leap_year(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date, by walking whole years and then
/// months. At most 8000 years of steps for the clamped range; the clock is read once per
/// command, so plain counting is clearer than a closed formula.
fn civil_from_days(mut days: u64) -> (u32, u32, u64) {
    let mut year = 1970u32;
    loop {
        let length = if is_leap_year(year) { 366 } else { 365 };
        if days < length {
            break;
        }
        days -= length;
        year += 1;
    }
    let mut month = 1u32;
    loop {
        let length = u64::from(days_in_month(year, month));
        if days < length || month == 12 {
            break;
        }
        days -= length;
        month += 1;
    }
    (year, month, days + 1)
}

// ---------------------------------------------------------------------------------------
// Session ids

/// Whether `text` is a session id: `^[a-z0-9][a-z0-9-]*$`, at most 64 characters, so it
/// is safe as a file name on every platform.
pub fn is_session_id(text: &str) -> bool {
    let mut bytes = text.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    text.len() <= MAX_SESSION_ID_LENGTH
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && bytes.all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

/// The id of a new session: `YYYYMMDD-HHMMSS-<person>-<nonce>`, where `<person>` is the
/// Person id with `_` as `-`, cut to keep the id within 64 characters, and `<nonce>` is 8
/// hex digits of a number the driver supplies (random or a counter). The driver creates
/// the file with create-new semantics and asks again with another nonce if it exists, so
/// ids are unique per workspace. `None` if `person_id` is not a slug.
pub fn session_id(started_at: &Timestamp, person_id: &str, nonce: u32) -> Option<String> {
    if !is_slug(person_id) {
        return None;
    }
    let time = started_at.compact();
    let nonce = format!("{nonce:08x}");
    let room = MAX_SESSION_ID_LENGTH - time.len() - nonce.len() - 2;
    let mut person: String =
        person_id.chars().map(|character| if character == '_' { '-' } else { character }).collect();
    person.truncate(room);
    while person.ends_with('-') {
        person.pop();
    }
    let id = format!("{time}-{person}-{nonce}");
    is_session_id(&id).then_some(id)
}

// ---------------------------------------------------------------------------------------
// The record

/// One session's lifecycle evidence. It is not a transcript and not resumable: it records
/// who ran where, with which runner and model, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: String,
    pub person_id: String,
    /// The Person's name when the session started (display only).
    pub person: String,
    pub role: String,
    pub project_id: String,
    /// The resolved project folder the runner started in.
    pub cwd: String,
    /// The runner's name from the runner table (`claude`, `codex`, …).
    pub provider: String,
    pub model: Option<String>,
    pub status: Status,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub exit_code: Option<i32>,
    /// The runner's process id, once spawned.
    pub pid: Option<u32>,
    /// The process start time as the OS reports it (on Linux field 22 of
    /// `/proc/<pid>/stat`, clock ticks since boot), so a reused pid is told apart.
    pub pid_start: Option<u64>,
    pub links: SessionLinks,
}

/// What ties a session to the rest: the role's bundle it ran with, the runner's own
/// conversation id, the session it resumed and the swarm run it belongs to. Records
/// written before these existed lack the keys; they read as `null` (and `false`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionLinks {
    /// The id of the role bundle the runner saw (a session started as a roster role).
    pub bundle: Option<String>,
    /// The runner's conversation id, fixed at the start, for `people resume`.
    pub conversation: Option<String>,
    /// The session this one resumed.
    pub resumed_from: Option<String>,
    /// The swarm run this session belongs to.
    pub run: Option<String>,
    /// True for a swarm role no Person fills: `person_id` is then the role's slug.
    pub ephemeral: bool,
    /// The isolation the session ran under, when not `inherited`.
    pub isolation: Option<Isolation>,
    /// The session's own `git worktree` of the project (its `cwd`), for `worktree` and
    /// `session` isolation.
    pub worktree: Option<String>,
    /// The branch of that worktree: `people/<person>/<session id>`.
    pub branch: Option<String>,
    /// The terminal multiplexer hosting the session (`tmux`), so it outlives the command
    /// that started it; `None` when it ran in its starter's own terminal.
    pub host: Option<String>,
}

/// What the driver knows when it writes the first, `launching`, record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub id: String,
    pub person_id: String,
    pub person: String,
    pub role: String,
    pub project_id: String,
    pub cwd: String,
    pub provider: String,
    pub model: Option<String>,
    pub started_at: Timestamp,
    pub links: SessionLinks,
}

/// How a session ended, as the driver observed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The runner exited on its own with this status: 0 is `completed`, else `failed`.
    /// A runner ended by a signal nobody here sent is `128 + signal`, as shells report it.
    Exited { exit_code: i32 },
    /// The runner could not be spawned: `failed` with no exit code.
    SpawnFailed,
    /// The user stopped it; the exit status if one was collected.
    Stopped { exit_code: Option<i32> },
    /// `max_seconds` ran out; the exit status if one was collected.
    TimedOut { exit_code: Option<i32> },
    /// `max_tokens` was reached; the exit status if one was collected.
    BudgetExceeded { exit_code: Option<i32> },
    /// The process vanished without an outcome.
    Interrupted,
}

impl Ending {
    pub fn status(self) -> Status {
        match self {
            Ending::Exited { exit_code: 0 } => Status::Completed,
            Ending::Exited { .. } | Ending::SpawnFailed => Status::Failed,
            Ending::Stopped { .. } => Status::Stopped,
            Ending::TimedOut { .. } => Status::TimedOut,
            Ending::BudgetExceeded { .. } => Status::BudgetExceeded,
            Ending::Interrupted => Status::Interrupted,
        }
    }

    fn exit_code(self) -> Option<i32> {
        match self {
            Ending::Exited { exit_code } => Some(exit_code),
            Ending::Stopped { exit_code } | Ending::TimedOut { exit_code } | Ending::BudgetExceeded { exit_code } => {
                exit_code
            }
            Ending::SpawnFailed | Ending::Interrupted => None,
        }
    }
}

impl SessionRecord {
    /// The first record of a session, written before the spawn.
    pub fn launching(launch: Launch) -> Self {
        Self {
            id: launch.id,
            person_id: launch.person_id,
            person: launch.person,
            role: launch.role,
            project_id: launch.project_id,
            cwd: launch.cwd,
            provider: launch.provider,
            model: launch.model,
            status: Status::Launching,
            started_at: launch.started_at,
            ended_at: None,
            exit_code: None,
            pid: None,
            pid_start: None,
            links: launch.links,
        }
    }

    /// `launching → running` once the runner is spawned.
    pub fn mark_running(&mut self, pid: u32, pid_start: u64) -> Result<(), SessionError> {
        if pid == 0 {
            return Err(SessionError::InvalidPid);
        }
        self.status = self.status.transition(Status::Running)?;
        self.pid = Some(pid);
        self.pid_start = Some(pid_start);
        Ok(())
    }

    /// Moves to the terminal state `ending` names, at `ended_at`.
    pub fn end(&mut self, ending: Ending, ended_at: Timestamp) -> Result<(), SessionError> {
        let status = self.status.transition(ending.status())?;
        if ended_at < self.started_at {
            return Err(SessionError::EndsBeforeStart);
        }
        self.status = status;
        self.ended_at = Some(ended_at);
        self.exit_code = ending.exit_code();
        Ok(())
    }

    /// The file name of this record inside [`SESSIONS_DIRECTORY`].
    pub fn file_name(&self) -> String {
        format!("{}.json", self.id)
    }
}

/// The record on disk. Field order is the key order written; `null` is written for an
/// unknown value rather than omitting the key, so every record has the same keys.
#[derive(Serialize)]
struct RecordFile<'a> {
    spec: &'static str,
    id: &'a str,
    person_id: &'a str,
    person: &'a str,
    role: &'a str,
    project_id: &'a str,
    cwd: &'a str,
    provider: &'a str,
    model: Option<&'a str>,
    status: &'static str,
    started_at: &'a str,
    ended_at: Option<&'a str>,
    exit_code: Option<i32>,
    pid: Option<u32>,
    pid_start: Option<u64>,
    bundle: Option<&'a str>,
    conversation: Option<&'a str>,
    resumed_from: Option<&'a str>,
    run: Option<&'a str>,
    ephemeral: bool,
    isolation: Option<&'static str>,
    worktree: Option<&'a str>,
    branch: Option<&'a str>,
    host: Option<&'a str>,
}

/// The keys a record may lack (records written before them); a missing one is `null`.
pub(crate) const OPTIONAL_FIELDS: [&str; 9] =
    ["bundle", "conversation", "resumed_from", "run", "ephemeral", "isolation", "worktree", "branch", "host"];

/// Every key a record has, in the written order.
pub(crate) const RECORD_FIELDS: [&str; 24] = [
    "spec",
    "id",
    "person_id",
    "person",
    "role",
    "project_id",
    "cwd",
    "provider",
    "model",
    "status",
    "started_at",
    "ended_at",
    "exit_code",
    "pid",
    "pid_start",
    "bundle",
    "conversation",
    "resumed_from",
    "run",
    "ephemeral",
    "isolation",
    "worktree",
    "branch",
    "host",
];

/// The canonical bytes of a record: fixed key order, 2-space indent, trailing newline.
pub fn record_bytes(record: &SessionRecord) -> Vec<u8> {
    super::document::json_bytes(&RecordFile {
        spec: SESSION_SPEC,
        id: &record.id,
        person_id: &record.person_id,
        person: &record.person,
        role: &record.role,
        project_id: &record.project_id,
        cwd: &record.cwd,
        provider: &record.provider,
        model: record.model.as_deref(),
        status: record.status.as_str(),
        started_at: record.started_at.as_str(),
        ended_at: record.ended_at.as_ref().map(Timestamp::as_str),
        exit_code: record.exit_code,
        pid: record.pid,
        pid_start: record.pid_start,
        bundle: record.links.bundle.as_deref(),
        conversation: record.links.conversation.as_deref(),
        resumed_from: record.links.resumed_from.as_deref(),
        run: record.links.run.as_deref(),
        ephemeral: record.links.ephemeral,
        isolation: record.links.isolation.map(Isolation::as_str),
        worktree: record.links.worktree.as_deref(),
        branch: record.links.branch.as_deref(),
        host: record.links.host.as_deref(),
    })
}

/// The bytes of a record, checked as a reader will check them, so nothing is written
/// that a later listing would refuse (a `cwd` over 4096 bytes, a bad id, …). The driver
/// writes only what this returns.
pub fn checked_record_bytes(record: &SessionRecord) -> Result<Vec<u8>, Vec<Diagnostic>> {
    let bytes = record_bytes(record);
    check_record(&record.file_name(), &bytes)?;
    Ok(bytes)
}

/// Checks one record file named `name` in the sessions folder: size, file name, hardened
/// parse, every field, then the rules across fields. Findings name the field from the
/// contract and the position, never the value.
pub fn check_record(name: &str, bytes: &[u8]) -> Result<SessionRecord, Vec<Diagnostic>> {
    let path = format!("{SESSIONS_DIRECTORY}/{name}");
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(vec![
            finding::error("record-too-large", &path, "a session record is larger than 16 KiB; it was not read")
                .hint("remove the file; acompose never writes records this large"),
        ]);
    }
    let Some(stem) = name.strip_suffix(".json").filter(|stem| is_session_id(stem)) else {
        return Err(vec![finding::error(
            "invalid-record-name",
            &path,
            "a session record must be named `<id>.json` with a lowercase id of letters, digits and `-`",
        )]);
    };
    let tree = json::parse(bytes).map_err(|error| vec![finding::syntax(&path, error)])?;
    let Some(object) = tree.value.as_object() else {
        return Err(vec![
            finding::error("record-not-object", &path, "a session record must be a JSON object")
                .at_position(tree.position("")),
        ]);
    };
    let mut reader = FieldReader { tree: &tree, object, path: &path, findings: Vec::new() };
    reader.reject_unknown_fields();
    let record = reader.read(stem);
    match record {
        Some(record) if reader.findings.is_empty() => Ok(record),
        _ => {
            if reader.findings.is_empty() {
                reader.findings.push(finding::error("undecodable", &path, "the session record could not be read"));
            }
            Err(reader.findings)
        }
    }
}

/// Reads the fields of one record, collecting a finding per bad field.
struct FieldReader<'a> {
    tree: &'a Tree,
    object: &'a Map<String, Value>,
    path: &'a str,
    findings: Vec<Diagnostic>,
}

impl FieldReader<'_> {
    fn reject_unknown_fields(&mut self) {
        let unknown: Vec<String> =
            self.object.keys().filter(|key| !RECORD_FIELDS.contains(&key.as_str())).cloned().collect();
        for key in unknown {
            let mut pointer = String::new();
            super::tree::push_token(&mut pointer, &key);
            let finding =
                finding::error("unknown-field", self.path, "a session record has a field the format does not define")
                    .at_position(self.tree.key_position(&pointer));
            self.findings.push(finding);
        }
    }

    fn fail(&mut self, field: &'static str, code: &'static str, message: &'static str) {
        let position = self.tree.key_position(&format!("/{field}"));
        self.findings.push(finding::error(code, self.path, message).at_position(position).field(field));
    }

    /// The value of a required key, or a `missing-field` finding.
    fn value(&mut self, field: &'static str) -> Option<&Value> {
        let object = self.object;
        let value = object.get(field);
        if value.is_none() {
            self.fail(field, "missing-field", "a session record lacks a required field");
        }
        value
    }

    fn text(&mut self, field: &'static str, valid: fn(&str) -> bool, message: &'static str) -> Option<String> {
        let value = self.value(field)?;
        match value.as_str() {
            Some(text) if valid(text) => Some(text.to_owned()),
            Some(_) => {
                self.fail(field, "invalid-field", message);
                None
            }
            None => {
                self.fail(field, "wrong-type", "this field must be a string");
                None
            }
        }
    }

    /// A key that must be present and may be `null`. `Some(None)` is a present `null`.
    fn nullable<T>(
        &mut self,
        field: &'static str,
        read: impl Fn(&Value) -> Option<T>,
        message: &'static str,
    ) -> Option<Option<T>> {
        if OPTIONAL_FIELDS.contains(&field) && !self.object.contains_key(field) {
            return Some(None);
        }
        let value = self.value(field)?;
        if value.is_null() {
            return Some(None);
        }
        match read(value) {
            Some(read) => Some(Some(read)),
            None => {
                self.fail(field, "invalid-field", message);
                None
            }
        }
    }

    fn read(&mut self, stem: &str) -> Option<SessionRecord> {
        let spec = self.text("spec", |text| text == SESSION_SPEC, "`spec` must be `acompose/person-session@1`");
        let id = self.text(
            "id",
            is_session_id,
            "`id` must be a lowercase id of letters, digits and `-`, at most 64 characters",
        );
        let person_id = self.text("person_id", is_slug, "`person_id` must be a Person id");
        let person = self.text("person", is_person_name, "`person` must be 1 to 128 characters");
        let role = self.text("role", is_slug, "`role` must be a role slug");
        let project_id = self.text("project_id", is_slug, "`project_id` must be a project id");
        let cwd =
            self.text("cwd", is_cwd, "`cwd` must be an absolute path without control characters, at most 4096 bytes");
        let provider = self.text("provider", is_slug, "`provider` must be a runner name");
        let model = self.nullable(
            "model",
            |value| value.as_str().filter(|text| is_reference(text)).map(str::to_owned),
            "`model` must be a model reference or null",
        );
        let status =
            self.text("status", |text| Status::parse(text).is_some(), "`status` is not one of the session statuses");
        let started_at = self.text(
            "started_at",
            |text| Timestamp::parse(text).is_some(),
            "`started_at` must be `YYYY-MM-DDTHH:MM:SSZ`",
        );
        let ended_at = self.nullable(
            "ended_at",
            |value| value.as_str().and_then(Timestamp::parse),
            "`ended_at` must be `YYYY-MM-DDTHH:MM:SSZ` or null",
        );
        let exit_code = self.nullable(
            "exit_code",
            |value| value.as_i64().and_then(|code| i32::try_from(code).ok()),
            "`exit_code` must be a 32-bit whole number or null",
        );
        let pid = self.nullable(
            "pid",
            |value| value.as_u64().and_then(|pid| u32::try_from(pid).ok()).filter(|pid| *pid > 0),
            "`pid` must be a positive process id or null",
        );
        let pid_start =
            self.nullable("pid_start", Value::as_u64, "`pid_start` must be a non-negative whole number or null");

        let links = self.links();
        let (_, id, person_id, person, role, project_id, cwd, provider, model, status, started_at) =
            (spec?, id?, person_id?, person?, role?, project_id?, cwd?, provider?, model?, status?, started_at?);
        let (ended_at, exit_code, pid, pid_start) = (ended_at?, exit_code?, pid?, pid_start?);
        let status = Status::parse(&status)?;
        let started_at = Timestamp::parse(&started_at)?;
        let record = SessionRecord {
            id,
            person_id,
            person,
            role,
            project_id,
            cwd,
            provider,
            model,
            status,
            started_at,
            ended_at,
            exit_code,
            pid,
            pid_start,
            links: links?,
        };
        self.check_consistency(&record, stem);
        Some(record)
    }

    /// The link fields, each optional in older records.
    fn links(&mut self) -> Option<SessionLinks> {
        let bundle = self.nullable(
            "bundle",
            |value| value.as_str().filter(|text| is_bundle_id(text)).map(str::to_owned),
            "`bundle` must be a bundle id (16 lowercase hex digits) or null",
        );
        let conversation = self.nullable(
            "conversation",
            |value| value.as_str().filter(|text| is_reference(text)).map(str::to_owned),
            "`conversation` must be a conversation id or null",
        );
        let resumed_from = self.nullable(
            "resumed_from",
            |value| value.as_str().filter(|text| is_session_id(text)).map(str::to_owned),
            "`resumed_from` must be a session id or null",
        );
        let run = self.nullable(
            "run",
            |value| value.as_str().filter(|text| is_session_id(text)).map(str::to_owned),
            "`run` must be a run id or null",
        );
        let ephemeral = self.nullable("ephemeral", Value::as_bool, "`ephemeral` must be true or false");
        let isolation = self.nullable(
            "isolation",
            |value| value.as_str().and_then(Isolation::parse).filter(|isolation| *isolation != Isolation::Inherited),
            "`isolation` must be `worktree`, `session` or null",
        );
        let worktree = self.nullable(
            "worktree",
            |value| value.as_str().filter(|text| is_cwd(text)).map(str::to_owned),
            "`worktree` must be an absolute path without control characters or null",
        );
        let branch = self.nullable(
            "branch",
            |value| value.as_str().filter(|text| is_session_branch(text)).map(str::to_owned),
            "`branch` must be `people/<person>/<session id>` or null",
        );
        let host = self.nullable(
            "host",
            |value| value.as_str().filter(|text| *text == HOST_TMUX).map(str::to_owned),
            "`host` must be `tmux` or null",
        );
        Some(SessionLinks {
            bundle: bundle?,
            conversation: conversation?,
            resumed_from: resumed_from?,
            run: run?,
            ephemeral: ephemeral?.unwrap_or(false),
            isolation: isolation?,
            worktree: worktree?,
            branch: branch?,
            host: host?,
        })
    }

    /// The rules across fields, which a hand-edited or torn record can break.
    fn check_consistency(&mut self, record: &SessionRecord, stem: &str) {
        if record.id != stem {
            self.fail("id", "id-file-mismatch", "`id` does not equal the file name without `.json`");
        }
        if record.status.is_active() != record.ended_at.is_none() {
            self.fail("ended_at", "inconsistent-record", "`ended_at` must be null exactly while the session is active");
        }
        if record.ended_at.as_ref().is_some_and(|ended_at| *ended_at < record.started_at) {
            self.fail("ended_at", "inconsistent-record", "`ended_at` is earlier than `started_at`");
        }
        let exit_code_fits = match record.status {
            Status::Launching | Status::Running | Status::Interrupted => record.exit_code.is_none(),
            Status::Completed => record.exit_code == Some(0),
            Status::Failed => record.exit_code != Some(0),
            Status::Stopped | Status::TimedOut | Status::BudgetExceeded => true,
        };
        if !exit_code_fits {
            self.fail("exit_code", "inconsistent-record", "`exit_code` does not fit the status");
        }
        if record.links.isolation.is_some() != record.links.worktree.is_some()
            || record.links.worktree.is_some() != record.links.branch.is_some()
        {
            self.fail("worktree", "inconsistent-record", "`isolation`, `worktree` and `branch` are set together");
        }
        if record.pid.is_some() != record.pid_start.is_some() {
            self.fail("pid_start", "inconsistent-record", "`pid` and `pid_start` must both be set or both be null");
        }
        if record.status == Status::Running && record.pid.is_none() {
            self.fail("pid", "inconsistent-record", "a running session must record its process id");
        }
        if record.status == Status::Launching && record.pid.is_some() {
            self.fail("pid", "inconsistent-record", "a launching session has no process yet");
        }
        if matches!(record.status, Status::Completed | Status::TimedOut | Status::BudgetExceeded)
            && record.pid.is_none()
        {
            self.fail("pid", "inconsistent-record", "a session that ran must record its process id");
        }
    }
}

/// The branch of a session's worktree: `people/<person id>/<session id>`. `None` when
/// either is not a valid id.
pub fn session_branch(person_id: &str, session_id: &str) -> Option<String> {
    (is_slug(person_id) && is_session_id(session_id)).then(|| format!("people/{person_id}/{session_id}"))
}

/// Whether `text` is a branch [`session_branch`] makes.
pub fn is_session_branch(text: &str) -> bool {
    let mut parts = text.split('/');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("people"), Some(person), Some(session), None) if is_slug(person) && is_session_id(session)
    )
}

/// Whether `text` is a bundle id: 16 lowercase hex digits.
pub fn is_bundle_id(text: &str) -> bool {
    text.len() == 16 && text.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

fn is_person_name(text: &str) -> bool {
    !text.is_empty() && text.chars().count() <= MAX_PERSON_NAME_CHARACTERS
}

fn is_cwd(text: &str) -> bool {
    text.starts_with('/') && text.len() <= MAX_CWD_BYTES && !text.chars().any(char::is_control)
}

// ---------------------------------------------------------------------------------------
// Listing and reconciliation

/// Sorts records newest first: by `started_at` descending, then by id descending, so
/// the order is total and the same on every machine.
pub(crate) fn sort_newest_first(records: &mut [SessionRecord]) {
    records.sort_by(|left, right| right.started_at.cmp(&left.started_at).then_with(|| right.id.cmp(&left.id)));
}

/// The records of a sessions folder and what was wrong with the others.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordListing {
    /// Valid records, newest first.
    pub records: Vec<SessionRecord>,
    /// One or more findings per file that was refused; those files are left as they are.
    pub findings: Vec<Diagnostic>,
}

/// Checks every file of the sessions folder the driver read. Names starting with `.`
/// are the driver's own (its lock and temporary files) and are skipped; every other
/// file must be a valid record. `refused` holds what the driver would not read
/// (symlinks, folders). More than 512 entries is refused as a whole, before any is
/// checked, so a listing is bounded work.
pub fn read_records(files: &[SourceFile], refused: Vec<Diagnostic>) -> RecordListing {
    let mut listing = RecordListing { records: Vec::new(), findings: refused };
    let files: Vec<&SourceFile> = files.iter().filter(|file| !file.name.starts_with('.')).collect();
    if files.len() > MAX_RECORDS {
        listing.findings.push(
            finding::error("too-many-records", SESSIONS_DIRECTORY, "the sessions folder holds more than 512 records")
                .hint("move old records out of the folder"),
        );
        return listing;
    }
    for file in files {
        match check_record(&file.name, &file.bytes) {
            Ok(record) => listing.records.push(record),
            Err(findings) => listing.findings.extend(findings),
        }
    }
    sort_newest_first(&mut listing.records);
    listing
}

/// What the driver saw when it looked up the pid of an active record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// A process with that pid exists and the OS reports this start time for it.
    Alive { pid_start: u64 },
    /// No process has that pid.
    Gone,
}

/// The session id and pid of every active record with a process to look up: what the
/// driver must observe before calling [`reconcile`].
pub fn processes_to_observe(records: &[SessionRecord]) -> Vec<(&str, u32)> {
    records
        .iter()
        .filter(|record| record.status.is_active())
        .filter_map(|record| record.pid.map(|pid| (record.id.as_str(), pid)))
        .collect()
}

/// Why reconciliation ended a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptReason {
    /// No process has the recorded pid.
    ProcessGone,
    /// A process has the pid but started at another time: the pid was reused.
    PidReused,
    /// The record is `launching` with no pid. The driver holds the sessions lock from
    /// writing `launching` until writing `running`, so whoever reconciles under the lock
    /// finds such a record only if its launcher died.
    LauncherGone,
}

impl InterruptReason {
    pub fn message(self) -> &'static str {
        match self {
            InterruptReason::ProcessGone => "its process no longer exists",
            InterruptReason::PidReused => "its process id now belongs to another process",
            InterruptReason::LauncherGone => "it was never started: its launcher stopped before the spawn",
        }
    }
}

/// One record reconciliation ends, with the record as it is to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interruption {
    pub previous: Status,
    pub reason: InterruptReason,
    pub record: SessionRecord,
}

/// The records that become `interrupted`, given what the driver observed for the pid of
/// each active record (keyed by session id). An active record with a pid but no
/// observation is left alone: nothing is claimed that was not looked at. `now` becomes
/// `ended_at` (or `started_at`, if the clock reads earlier than the start).
pub fn reconcile(
    records: &[SessionRecord],
    observations: &BTreeMap<String, Observation>,
    now: &Timestamp,
) -> Vec<Interruption> {
    let mut interruptions = Vec::new();
    for record in records.iter().filter(|record| record.status.is_active()) {
        let reason = match (record.pid_start, observations.get(&record.id)) {
            (None, _) => (record.status == Status::Launching).then_some(InterruptReason::LauncherGone),
            (Some(_), None) => None,
            (Some(_), Some(Observation::Gone)) => Some(InterruptReason::ProcessGone),
            (Some(recorded), Some(Observation::Alive { pid_start })) => {
                (recorded != *pid_start).then_some(InterruptReason::PidReused)
            }
        };
        let Some(reason) = reason else {
            continue;
        };
        let mut updated = record.clone();
        let ended_at = if *now < record.started_at { record.started_at.clone() } else { now.clone() };
        // Active records always allow `interrupted`, and the end is clamped to the start,
        // so `end` cannot fail here; a failure would leave the record out rather than lie.
        if updated.end(Ending::Interrupted, ended_at).is_ok() {
            interruptions.push(Interruption { previous: record.status, reason, record: updated });
        }
    }
    interruptions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap_or_else(|| Timestamp::from_unix_seconds(0))
    }

    fn launch(id: &str, started_at: &str) -> Launch {
        Launch {
            id: id.to_owned(),
            person_id: "pam".to_owned(),
            person: "Pam Beesly".to_owned(),
            role: "reception".to_owned(),
            project_id: "desk".to_owned(),
            cwd: "/work/desk".to_owned(),
            provider: "claude".to_owned(),
            model: Some("sonnet".to_owned()),
            started_at: time(started_at),
            links: Default::default(),
        }
    }

    fn running(id: &str, started_at: &str, pid: u32, pid_start: u64) -> SessionRecord {
        let mut record = SessionRecord::launching(launch(id, started_at));
        assert_eq!(record.mark_running(pid, pid_start), Ok(()));
        record
    }

    const ALLOWED: [(Status, Status); 10] = [
        (Status::Launching, Status::Running),
        (Status::Launching, Status::Failed),
        (Status::Launching, Status::Stopped),
        (Status::Launching, Status::Interrupted),
        (Status::Running, Status::Completed),
        (Status::Running, Status::Failed),
        (Status::Running, Status::Stopped),
        (Status::Running, Status::TimedOut),
        (Status::Running, Status::BudgetExceeded),
        (Status::Running, Status::Interrupted),
    ];

    #[test]
    fn the_transition_table_is_exactly_the_allowed_list() {
        for from in Status::ALL {
            for to in Status::ALL {
                let expected = ALLOWED.contains(&(from, to));
                assert_eq!(from.allows(to), expected, "{} -> {}", from.as_str(), to.as_str());
                let result = from.transition(to);
                if expected {
                    assert_eq!(result, Ok(to));
                } else {
                    assert_eq!(result, Err(SessionError::ForbiddenTransition { from, to }));
                }
            }
        }
    }

    #[test]
    fn terminal_states_are_final_and_active_ones_are_not() {
        for status in Status::ALL {
            assert_eq!(status.is_terminal(), Status::ALL.iter().all(|to| !status.allows(*to)), "{}", status.as_str());
        }
    }

    #[test]
    fn status_names_round_trip() {
        for status in Status::ALL {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
        assert_eq!(Status::parse("Running"), None);
        assert_eq!(Status::parse("timed-out"), None);
    }

    #[test]
    fn timestamps_are_exact_and_real() {
        assert!(Timestamp::parse("2026-12-01T09:57:17Z").is_some());
        assert!(Timestamp::parse("2024-02-29T00:00:00Z").is_some());
        for bad in [
            "2026-12-01T09:57:17",
            "2026-12-01T09:57:17.5Z",
            "2026-12-01T09:57:17+00:00",
            "2026-12-01 09:57:17Z",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T23:60:00Z",
            "2026-12-01T23:59:60Z",
            "+026-12-01T23:59:59Z",
            "",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn unix_seconds_format_as_utc_text() {
        assert_eq!(Timestamp::from_unix_seconds(0).as_str(), "1970-01-01T00:00:00Z");
        assert_eq!(Timestamp::from_unix_seconds(951_782_400).as_str(), "2000-02-29T00:00:00Z");
        assert_eq!(Timestamp::from_unix_seconds(1_798_711_037).as_str(), "2026-12-31T09:57:17Z");
        assert_eq!(Timestamp::from_unix_seconds(u64::MAX).as_str(), "9999-12-31T23:59:59Z");
        for seconds in [0, 86_399, 86_400, 951_868_799, 1_798_711_037, 4_102_444_800] {
            let text = Timestamp::from_unix_seconds(seconds);
            assert_eq!(Timestamp::parse(text.as_str()).as_ref(), Some(&text));
        }
    }

    #[test]
    fn session_ids_are_filename_safe_and_bounded() {
        let started = time("2026-12-01T09:57:17Z");
        assert_eq!(session_id(&started, "pam", 0xbeef).as_deref(), Some("20261201-095717-pam-0000beef"));
        assert_eq!(session_id(&started, "dwight_k", 1).as_deref(), Some("20261201-095717-dwight-k-00000001"));
        let long = session_id(&started, &"a_".repeat(32), u32::MAX).unwrap_or_default();
        assert!(long.len() <= MAX_SESSION_ID_LENGTH && is_session_id(&long), "{long}");
        assert!(long.ends_with("a-ffffffff"));
        assert_eq!(session_id(&started, "Pam", 1), None);
        assert_ne!(session_id(&started, "pam", 1), session_id(&started, "pam", 2));
        assert!(!is_session_id("a_b"));
        assert!(!is_session_id("../x"));
        assert!(!is_session_id(&"a".repeat(65)));
    }

    #[test]
    fn endings_set_status_exit_code_and_end_time() {
        let mut completed = running("s-1", "2026-12-01T09:00:00Z", 42, 7);
        assert_eq!(completed.end(Ending::Exited { exit_code: 0 }, time("2026-12-01T09:05:00Z")), Ok(()));
        assert_eq!((completed.status, completed.exit_code), (Status::Completed, Some(0)));
        let mut failed = running("s-2", "2026-12-01T09:00:00Z", 42, 7);
        assert_eq!(failed.end(Ending::Exited { exit_code: 3 }, time("2026-12-01T09:05:00Z")), Ok(()));
        assert_eq!((failed.status, failed.exit_code), (Status::Failed, Some(3)));
        let mut never = SessionRecord::launching(launch("s-3", "2026-12-01T09:00:00Z"));
        assert_eq!(never.end(Ending::SpawnFailed, time("2026-12-01T09:00:00Z")), Ok(()));
        assert_eq!((never.status, never.exit_code, never.pid), (Status::Failed, None, None));
        assert_eq!(
            never.end(Ending::Interrupted, time("2026-12-01T09:00:01Z")),
            Err(SessionError::ForbiddenTransition { from: Status::Failed, to: Status::Interrupted })
        );
        let mut early = running("s-4", "2026-12-01T09:00:00Z", 42, 7);
        assert_eq!(
            early.end(Ending::TimedOut { exit_code: None }, time("2026-12-01T08:00:00Z")),
            Err(SessionError::EndsBeforeStart)
        );
        assert_eq!(early.status, Status::Running);
        let mut launching = SessionRecord::launching(launch("s-5", "2026-12-01T09:00:00Z"));
        assert_eq!(launching.mark_running(0, 1), Err(SessionError::InvalidPid));
        assert_eq!(
            launching.end(Ending::TimedOut { exit_code: None }, time("2026-12-01T09:00:00Z")),
            Err(SessionError::ForbiddenTransition { from: Status::Launching, to: Status::TimedOut })
        );
    }

    #[test]
    fn records_written_before_the_links_read_as_unlinked() {
        let record = running("20261201-090000-pam-00000002", "2026-12-01T09:00:00Z", 42, 7);
        let text = String::from_utf8(record_bytes(&record)).unwrap_or_default();
        let old: String = text
            .lines()
            .filter(|line| !OPTIONAL_FIELDS.iter().any(|field| line.starts_with(&format!("  \"{field}\""))))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("\"pid_start\": 7,", "\"pid_start\": 7");
        let read = check_record("20261201-090000-pam-00000002.json", old.as_bytes());
        assert_eq!(read.map(|read| read.links), Ok(SessionLinks::default()));
        let mut linked = record.clone();
        linked.links.bundle = Some("0123456789abcdef".to_owned());
        linked.links.conversation = Some("7f1c2d3e-0000-4000-8000-000000000001".to_owned());
        let back = check_record(&linked.file_name(), &record_bytes(&linked));
        assert_eq!(back.map(|back| back.links), Ok(linked.links.clone()));
        linked.links.bundle = Some("not-an-id".to_owned());
        assert!(check_record(&linked.file_name(), &record_bytes(&linked)).is_err());
    }

    #[test]
    fn records_are_written_in_the_fixed_order_and_read_back() {
        let mut record = running("20261201-090000-pam-00000001", "2026-12-01T09:00:00Z", 4242, 123_456);
        assert_eq!(record.end(Ending::Exited { exit_code: 3 }, time("2026-12-01T09:30:00Z")), Ok(()));
        let bytes = record_bytes(&record);
        let text = String::from_utf8(bytes.clone()).unwrap_or_default();
        assert_eq!(
            text,
            r#"{
  "spec": "acompose/person-session@1",
  "id": "20261201-090000-pam-00000001",
  "person_id": "pam",
  "person": "Pam Beesly",
  "role": "reception",
  "project_id": "desk",
  "cwd": "/work/desk",
  "provider": "claude",
  "model": "sonnet",
  "status": "failed",
  "started_at": "2026-12-01T09:00:00Z",
  "ended_at": "2026-12-01T09:30:00Z",
  "exit_code": 3,
  "pid": 4242,
  "pid_start": 123456,
  "bundle": null,
  "conversation": null,
  "resumed_from": null,
  "run": null,
  "ephemeral": false,
  "isolation": null,
  "worktree": null,
  "branch": null,
  "host": null
}
"#
        );
        assert_eq!(check_record(&record.file_name(), &bytes), Ok(record));
        let mut far = SessionRecord::launching(launch("s-1", "2026-12-01T09:00:00Z"));
        far.cwd = format!("/{}", "a".repeat(MAX_CWD_BYTES));
        let refused = checked_record_bytes(&far).err().unwrap_or_default();
        assert_eq!(refused.iter().map(|finding| finding.code).collect::<Vec<_>>(), ["invalid-field"]);
        let launching = SessionRecord::launching(launch("s-1", "2026-12-01T09:00:00Z"));
        assert_eq!(checked_record_bytes(&launching), Ok(record_bytes(&launching)));
        assert_eq!(check_record("s-1.json", &record_bytes(&launching)), Ok(launching));
    }

    /// The code and contract field of each finding.
    type Codes = Vec<(&'static str, Option<String>)>;

    fn codes(result: Result<SessionRecord, Vec<Diagnostic>>) -> Codes {
        match result {
            Ok(_) => Vec::new(),
            Err(findings) => findings.into_iter().map(|finding| (finding.code, finding.field)).collect(),
        }
    }

    fn edited(edit: impl Fn(&mut Map<String, Value>)) -> Vec<u8> {
        let record = running("s-1", "2026-12-01T09:00:00Z", 42, 7);
        let mut value: Value = serde_json::from_slice(&record_bytes(&record)).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            edit(object);
        }
        serde_json::to_vec(&value).unwrap_or_default()
    }

    #[test]
    fn hostile_records_are_reported_without_their_values() {
        let secret = "SECRET\u{1b}[31m";
        let oversize = edited(|object| {
            object.insert("person".to_owned(), Value::from("x".repeat(MAX_RECORD_BYTES)));
        });
        assert_eq!(codes(check_record("s-1.json", &oversize)), vec![("record-too-large", None)]);
        let cases: Vec<(Vec<u8>, Codes)> = vec![
            (
                edited(|object| {
                    object.insert("status".to_owned(), Value::from(secret));
                }),
                vec![("invalid-field", Some("status".to_owned()))],
            ),
            (
                edited(|object| {
                    object.insert(secret.to_owned(), Value::from(1));
                }),
                vec![("unknown-field", None)],
            ),
            (
                edited(|object| {
                    object.insert("task".to_owned(), Value::from(secret));
                }),
                vec![("unknown-field", None)],
            ),
            (
                edited(|object| {
                    object.remove("pid_start");
                }),
                vec![("missing-field", Some("pid_start".to_owned()))],
            ),
            (
                edited(|object| {
                    object.insert("pid".to_owned(), Value::from(-1));
                }),
                vec![("invalid-field", Some("pid".to_owned()))],
            ),
            (
                edited(|object| {
                    object.insert("started_at".to_owned(), Value::from("yesterday"));
                }),
                vec![("invalid-field", Some("started_at".to_owned()))],
            ),
            (
                edited(|object| {
                    object.insert("cwd".to_owned(), Value::from("relative/path"));
                }),
                vec![("invalid-field", Some("cwd".to_owned()))],
            ),
            (
                edited(|object| {
                    object.insert("status".to_owned(), Value::from("completed"));
                }),
                vec![
                    ("inconsistent-record", Some("ended_at".to_owned())),
                    ("inconsistent-record", Some("exit_code".to_owned())),
                ],
            ),
            (
                edited(|object| {
                    object.insert("id".to_owned(), Value::from("s-2"));
                }),
                vec![("id-file-mismatch", Some("id".to_owned()))],
            ),
            (b"[1]".to_vec(), vec![("record-not-object", None)]),
            (b"{\"spec\": 1, \"spec\": 2}".to_vec(), vec![("duplicate-key", None)]),
        ];
        for (bytes, expected) in cases {
            let result = check_record("s-1.json", &bytes);
            if let Err(findings) = &result {
                for finding in findings {
                    assert!(
                        !finding.message.contains("SECRET")
                            && !finding.file.as_deref().unwrap_or_default().contains("SECRET")
                    );
                    assert!(finding.field.as_deref().is_none_or(|field| RECORD_FIELDS.contains(&field)));
                }
            }
            assert_eq!(codes(result), expected);
        }
        assert_eq!(codes(check_record("../s-1.json", &edited(|_| {}))), vec![("invalid-record-name", None)]);
        assert_eq!(codes(check_record("S-1.json", &edited(|_| {}))), vec![("invalid-record-name", None)]);
    }

    #[test]
    fn a_folder_listing_keeps_valid_records_and_reports_the_rest() {
        let good = running("s-1", "2026-12-01T09:00:00Z", 42, 7);
        let newer = running("s-2", "2026-12-01T10:00:00Z", 43, 8);
        let files = vec![
            SourceFile::new("s-1.json", record_bytes(&good)),
            SourceFile::new("s-2.json", record_bytes(&newer)),
            SourceFile::new("s-3.json", b"{".to_vec()),
            SourceFile::new(".lock", Vec::new()),
        ];
        let listing = read_records(&files, vec![finding::symlink_refused(".agent-toolkit/sessions/s-4.json")]);
        assert_eq!(listing.records, vec![newer, good]);
        let found: Vec<&str> = listing.findings.iter().map(|finding| finding.code).collect();
        assert_eq!(found, ["symlink-refused", "json-syntax"]);
        let many: Vec<SourceFile> =
            (0..=MAX_RECORDS).map(|index| SourceFile::new(format!("s-{index}.json"), Vec::new())).collect();
        let listing = read_records(&many, Vec::new());
        assert!(listing.records.is_empty());
        let found: Vec<&str> = listing.findings.iter().map(|finding| finding.code).collect();
        assert_eq!(found, ["too-many-records"]);
    }

    #[test]
    fn listing_is_newest_first_then_by_id() {
        let mut records = vec![
            running("a", "2026-12-01T09:00:00Z", 1, 1),
            running("c", "2026-12-01T10:00:00Z", 1, 1),
            running("b", "2026-12-01T09:00:00Z", 1, 1),
        ];
        sort_newest_first(&mut records);
        let ids: Vec<&str> = records.iter().map(|record| record.id.as_str()).collect();
        assert_eq!(ids, ["c", "b", "a"]);
    }

    #[test]
    fn reconcile_interrupts_gone_and_reused_processes_only() {
        let mut finished = running("done", "2026-12-01T08:00:00Z", 10, 100);
        assert_eq!(finished.end(Ending::Exited { exit_code: 0 }, time("2026-12-01T08:10:00Z")), Ok(()));
        let records = vec![
            running("alive", "2026-12-01T09:00:00Z", 11, 110),
            running("gone", "2026-12-01T09:00:00Z", 12, 120),
            running("reused", "2026-12-01T09:00:00Z", 13, 130),
            running("unobserved", "2026-12-01T09:00:00Z", 14, 140),
            SessionRecord::launching(launch("orphan", "2026-12-01T09:00:00Z")),
            finished,
        ];
        let observations = BTreeMap::from([
            ("alive".to_owned(), Observation::Alive { pid_start: 110 }),
            ("gone".to_owned(), Observation::Gone),
            ("reused".to_owned(), Observation::Alive { pid_start: 999 }),
            ("done".to_owned(), Observation::Gone),
        ]);
        let observed: Vec<&str> = processes_to_observe(&records).into_iter().map(|(id, _)| id).collect();
        assert_eq!(observed, ["alive", "gone", "reused", "unobserved"]);
        let now = time("2026-12-01T11:00:00Z");
        let interruptions = reconcile(&records, &observations, &now);
        let summary: Vec<(&str, Status, InterruptReason)> = interruptions
            .iter()
            .map(|interruption| (interruption.record.id.as_str(), interruption.previous, interruption.reason))
            .collect();
        assert_eq!(
            summary,
            [
                ("gone", Status::Running, InterruptReason::ProcessGone),
                ("reused", Status::Running, InterruptReason::PidReused),
                ("orphan", Status::Launching, InterruptReason::LauncherGone),
            ]
        );
        for interruption in &interruptions {
            assert_eq!(interruption.record.status, Status::Interrupted);
            assert_eq!(interruption.record.ended_at.as_ref(), Some(&now));
            assert_eq!(interruption.record.exit_code, None);
            let name = interruption.record.file_name();
            assert_eq!(check_record(&name, &record_bytes(&interruption.record)).as_ref(), Ok(&interruption.record));
        }
    }

    #[test]
    fn reconcile_never_ends_a_record_before_it_started() {
        let records = vec![running("gone", "2026-12-01T09:00:00Z", 12, 120)];
        let observations = BTreeMap::from([("gone".to_owned(), Observation::Gone)]);
        let interruptions = reconcile(&records, &observations, &time("2026-12-01T08:00:00Z"));
        assert_eq!(
            interruptions.first().and_then(|interruption| interruption.record.ended_at.clone()),
            Some(time("2026-12-01T09:00:00Z"))
        );
    }
}
