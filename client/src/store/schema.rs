//! The store's schema: append-only migrations and the start-up self-check.
//!
//! **Invariant:** migrations are only ever appended. `PRAGMA user_version` counts the ones
//! applied; each migration is a list of single statements (one statement per `execute`,
//! so a typo fails loudly instead of silently skipping the rest of a batch).

/// Migration `n` (1-based) is `MIGRATIONS[n - 1]`.
pub(crate) const MIGRATIONS: &[&[&str]] = &[
    // 1: the initial schema.
    &[
        "CREATE TABLE settings (
            key        TEXT PRIMARY KEY,
            value      TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )",
        // One row per claim. `remote_task_id` is the Admin's opaque id, stored verbatim
        // (contract §5); it is not unique because the Admin may hand the same task to us
        // again after a reassignment.
        "CREATE TABLE tasks (
            id             INTEGER PRIMARY KEY,
            remote_task_id TEXT NOT NULL,
            task_type      TEXT NOT NULL,
            execution_mode TEXT NOT NULL,
            version        INTEGER NOT NULL,
            priority       INTEGER NOT NULL,
            payload        TEXT NOT NULL,
            raw_task       TEXT NOT NULL,
            state          TEXT NOT NULL CHECK (state IN ('claimed','running','reporting',
                              'succeeded','failed','manual_review','retry_wait','cancelled')),
            claimed_at     TEXT NOT NULL,
            updated_at     TEXT NOT NULL
        )",
        "CREATE INDEX tasks_remote ON tasks (remote_task_id)",
        "CREATE INDEX tasks_state ON tasks (state)",
        "CREATE TABLE task_runs (
            id                     INTEGER PRIMARY KEY,
            task_id                INTEGER NOT NULL REFERENCES tasks (id),
            attempt_id             TEXT NOT NULL UNIQUE,
            started_at             TEXT NOT NULL,
            irreversible_action_at TEXT,
            finished_at            TEXT,
            outcome                TEXT
        )",
        // The full request as it goes on the wire, minus the token (decisions §3).
        "CREATE TABLE outbox (
            id              INTEGER PRIMARY KEY,
            task_id         INTEGER NOT NULL REFERENCES tasks (id),
            run_id          INTEGER NOT NULL REFERENCES task_runs (id),
            kind            TEXT NOT NULL CHECK (kind IN ('result','failure')),
            remote_task_id  TEXT NOT NULL,
            method          TEXT NOT NULL,
            path            TEXT NOT NULL,
            headers         TEXT NOT NULL,
            body            BLOB NOT NULL,
            idempotency_key TEXT NOT NULL UNIQUE,
            on_accept_state TEXT NOT NULL,
            state           TEXT NOT NULL CHECK (state IN ('pending','sent','accepted','parked')),
            attempts        INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            last_error      TEXT,
            result_id       TEXT,
            response        BLOB,
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL,
            accepted_at     TEXT
        )",
        "CREATE INDEX outbox_due ON outbox (state, next_attempt_at)",
        "CREATE TABLE artifacts (
            id          INTEGER PRIMARY KEY,
            run_id      INTEGER NOT NULL REFERENCES task_runs (id),
            artifact_id TEXT NOT NULL UNIQUE,
            file        TEXT NOT NULL,
            sha256      TEXT NOT NULL,
            step        TEXT NOT NULL,
            taken_at    TEXT NOT NULL
        )",
        "CREATE TABLE spec_resolutions (
            id                      INTEGER PRIMARY KEY,
            run_id                  INTEGER NOT NULL REFERENCES task_runs (id),
            remote_task_id          TEXT NOT NULL,
            idempotency_key         TEXT NOT NULL UNIQUE,
            candidate_snapshot_hash TEXT NOT NULL,
            request_body            BLOB NOT NULL,
            state                   TEXT NOT NULL CHECK (state IN ('pending','resolved','abandoned')),
            attempts                INTEGER NOT NULL DEFAULT 0,
            last_error              TEXT,
            resolution_id           TEXT,
            outcome                 TEXT,
            response                BLOB,
            created_at              TEXT NOT NULL,
            updated_at              TEXT NOT NULL
        )",
        // What the operator must see and acknowledge: protocol errors from the Admin and
        // the §5.2 gap (claimed at the Admin, not saved here). Open alerts stop claiming.
        "CREATE TABLE operator_alerts (
            id             INTEGER PRIMARY KEY,
            kind           TEXT NOT NULL,
            remote_task_id TEXT,
            message        TEXT NOT NULL,
            raised_at      TEXT NOT NULL,
            acked_at       TEXT
        )",
    ],
    // 2: what a purchase confirmed right before its irreversible mark (goods,
    // ordered options, quantity, total, title), committed in the mark's own transaction
    // so crash recovery can reconcile the order without the page it was read from.
    &["ALTER TABLE task_runs ADD COLUMN purchase_snapshot TEXT"],
    // 3: what a human should hear about, and the webhook queue.
    // `notify_events` is filled by triggers in the same transaction as what it reports
    // (an operator alert of any kind, a `manual_review` outcome, an outbox item parked,
    // a device pause starting), so no writer has to remember it; the notifier adds the
    // time-based events (paused too long, no success, the daily summary) itself.
    // `webhook_deliveries` is one row per (event, webhook): pending until delivered or
    // given up. The webhook is named by a hash of its URL, never the URL (it holds keys).
    &[
        "CREATE TABLE notify_events (
            id         INTEGER PRIMARY KEY,
            source     TEXT NOT NULL,
            source_id  INTEGER,
            kind       TEXT,
            subject    TEXT,
            payload    TEXT,
            state      TEXT NOT NULL CHECK (state IN ('new','sent','suppressed','internal')),
            created_at TEXT NOT NULL
        )",
        "CREATE INDEX notify_events_state ON notify_events (state)",
        "CREATE INDEX notify_events_kind ON notify_events (kind, subject, created_at)",
        "CREATE TABLE webhook_deliveries (
            id              INTEGER PRIMARY KEY,
            event_id        INTEGER NOT NULL REFERENCES notify_events (id),
            webhook         TEXT NOT NULL,
            state           TEXT NOT NULL CHECK (state IN ('pending','delivered','given_up')),
            attempts        INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            last_error      TEXT,
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL
        )",
        "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at)",
        "CREATE TRIGGER notify_on_alert AFTER INSERT ON operator_alerts
         BEGIN
            INSERT INTO notify_events (source, source_id, state, created_at)
            VALUES ('alert', NEW.id, 'new', NEW.raised_at);
         END",
        "CREATE TRIGGER notify_on_manual_review AFTER INSERT ON outbox
         WHEN NEW.on_accept_state = 'manual_review'
         BEGIN
            INSERT INTO notify_events (source, source_id, state, created_at)
            VALUES ('manual_review', NEW.id, 'new', NEW.created_at);
         END",
        "CREATE TRIGGER notify_on_parked AFTER UPDATE OF state ON outbox
         WHEN NEW.state = 'parked' AND OLD.state <> 'parked'
         BEGIN
            INSERT INTO notify_events (source, source_id, state, created_at)
            VALUES ('outbox_parked', NEW.id, 'new', NEW.updated_at);
         END",
        "CREATE TRIGGER notify_on_device_pause AFTER INSERT ON settings
         WHEN NEW.key = 'device_pause'
         BEGIN
            INSERT INTO notify_events (source, state, payload, created_at)
            VALUES ('device_pause', 'internal', NEW.value, NEW.updated_at);
         END",
    ],
    // 4: indexes for the notifier's "no success" check, run every few seconds (runs
    // started since a time, the last success).
    &[
        "CREATE INDEX task_runs_started ON task_runs (started_at)",
        "CREATE INDEX task_runs_outcome ON task_runs (outcome, finished_at)",
    ],
    // 5: run outcomes counted as they are written (by task type and outcome label), so
    // `/metrics` reads a few rows instead of grouping every run at each scrape; the
    // counts are never decremented (a Prometheus counter), whatever is compacted later.
    &[
        "CREATE TABLE run_outcome_counts (
            task_type TEXT NOT NULL,
            outcome   TEXT NOT NULL,
            n         INTEGER NOT NULL,
            PRIMARY KEY (task_type, outcome)
        )",
        "INSERT INTO run_outcome_counts (task_type, outcome, n)
         SELECT t.task_type, r.outcome, COUNT(*) FROM task_runs r JOIN tasks t ON t.id = r.task_id
         WHERE r.outcome IS NOT NULL GROUP BY t.task_type, r.outcome",
        "CREATE TRIGGER count_run_outcome AFTER UPDATE OF outcome ON task_runs
         WHEN NEW.outcome IS NOT NULL AND OLD.outcome IS NULL
         BEGIN
            INSERT INTO run_outcome_counts (task_type, outcome, n)
            SELECT task_type, NEW.outcome, 1 FROM tasks WHERE id = NEW.task_id
            ON CONFLICT (task_type, outcome) DO UPDATE SET n = n + 1;
         END",
        "CREATE TRIGGER count_inserted_run_outcome AFTER INSERT ON task_runs
         WHEN NEW.outcome IS NOT NULL
         BEGIN
            INSERT INTO run_outcome_counts (task_type, outcome, n)
            SELECT task_type, NEW.outcome, 1 FROM tasks WHERE id = NEW.task_id
            ON CONFLICT (task_type, outcome) DO UPDATE SET n = n + 1;
         END",
    ],
    // 6: the account fingerprint per phone: what 个人中心 showed at the
    // first successful check (the baseline), when, the last check, and a different
    // reading waiting for the operator's `ack` (which makes it the baseline).
    &["CREATE TABLE account_fingerprints (
            serial               TEXT PRIMARY KEY,
            nickname             TEXT,
            masked_phone         TEXT,
            first_seen           TEXT NOT NULL,
            last_checked         TEXT NOT NULL,
            pending_nickname     TEXT,
            pending_masked_phone TEXT,
            pending_seen         TEXT
        )"],
    // 7: PDD versions per phone: live only on a version proven on that
    // phone — by a dry-run purchase that succeeded on it (`proven_by` = its attempt id) or
    // by an operator's `ack N` of its alert (`proven_by` = `ack N by USER`).
    &["CREATE TABLE pdd_versions (
            device     TEXT NOT NULL,
            version    TEXT NOT NULL,
            first_seen TEXT NOT NULL,
            proven_at  TEXT,
            proven_by  TEXT,
            alert_id   INTEGER,
            PRIMARY KEY (device, version)
        )"],
    // 8: the self-test per phone and PDD version: a dry-run purchase on
    // `self_test_goods_id` with no Admin involved; a pass lets `purchase_mode = auto`
    // declare live on that version. `failures` counts failed runs in a row (backoff).
    &["CREATE TABLE self_tests (
            device      TEXT NOT NULL,
            pdd_version TEXT NOT NULL,
            started_at  TEXT NOT NULL,
            finished_at TEXT,
            outcome     TEXT CHECK (outcome IN ('passed','failed')),
            code        TEXT,
            message     TEXT,
            failures    INTEGER NOT NULL DEFAULT 0,
            attempt_id  TEXT NOT NULL,
            PRIMARY KEY (device, pdd_version)
        )"],
    // 9: a `manual_review` task a human has dealt with (the console's "reviewed" button):
    // it leaves the status page's "needs a human" list.
    &["CREATE TABLE task_reviews (
            task_id     INTEGER PRIMARY KEY REFERENCES tasks (id),
            reviewed_at TEXT NOT NULL,
            reviewed_by TEXT NOT NULL
        )"],
];

/// Tables and the columns the code relies on; checked at every start.
pub(crate) const REQUIRED: &[(&str, &[&str])] = &[
    ("task_reviews", &["task_id", "reviewed_at", "reviewed_by"]),
    ("settings", &["key", "value", "updated_at"]),
    (
        "tasks",
        &[
            "id",
            "remote_task_id",
            "task_type",
            "execution_mode",
            "version",
            "priority",
            "payload",
            "raw_task",
            "state",
            "claimed_at",
            "updated_at",
        ],
    ),
    (
        "task_runs",
        &[
            "id",
            "task_id",
            "attempt_id",
            "started_at",
            "irreversible_action_at",
            "finished_at",
            "outcome",
            "purchase_snapshot",
        ],
    ),
    (
        "outbox",
        &[
            "id",
            "task_id",
            "run_id",
            "kind",
            "remote_task_id",
            "method",
            "path",
            "headers",
            "body",
            "idempotency_key",
            "on_accept_state",
            "state",
            "attempts",
            "next_attempt_at",
            "last_error",
            "result_id",
            "response",
            "created_at",
            "updated_at",
            "accepted_at",
        ],
    ),
    (
        "artifacts",
        &[
            "id",
            "run_id",
            "artifact_id",
            "file",
            "sha256",
            "step",
            "taken_at",
        ],
    ),
    (
        "spec_resolutions",
        &[
            "id",
            "run_id",
            "remote_task_id",
            "idempotency_key",
            "candidate_snapshot_hash",
            "request_body",
            "state",
            "attempts",
            "last_error",
            "resolution_id",
            "outcome",
            "response",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "notify_events",
        &[
            "id",
            "source",
            "source_id",
            "kind",
            "subject",
            "payload",
            "state",
            "created_at",
        ],
    ),
    (
        "webhook_deliveries",
        &[
            "id",
            "event_id",
            "webhook",
            "state",
            "attempts",
            "next_attempt_at",
            "last_error",
            "created_at",
            "updated_at",
        ],
    ),
    ("run_outcome_counts", &["task_type", "outcome", "n"]),
    (
        "pdd_versions",
        &[
            "device",
            "version",
            "first_seen",
            "proven_at",
            "proven_by",
            "alert_id",
        ],
    ),
    (
        "self_tests",
        &[
            "device",
            "pdd_version",
            "started_at",
            "finished_at",
            "outcome",
            "code",
            "message",
            "failures",
            "attempt_id",
        ],
    ),
    (
        "account_fingerprints",
        &[
            "serial",
            "nickname",
            "masked_phone",
            "first_seen",
            "last_checked",
            "pending_nickname",
            "pending_masked_phone",
            "pending_seen",
        ],
    ),
    (
        "operator_alerts",
        &[
            "id",
            "kind",
            "remote_task_id",
            "message",
            "raised_at",
            "acked_at",
        ],
    ),
];
