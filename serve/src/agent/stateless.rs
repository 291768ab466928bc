//! Stateless runs (`POST /runs`, `/runs/stream`, `/runs/wait`): a run on a thread made for
//! it, which is deleted once the run has ended (`on_completion: delete`, the protocol's
//! default; deleted as `DELETE /threads/{id}` deletes: archived, out of every listing) or
//! kept (`keep`). The run itself is an ordinary run of that thread: its object, its stream
//! and its events are the same, as long as the thread is there.
//!
//! A thread to delete is recorded before its run starts (`$REIN_HOME/serve/delete/`): a
//! server that stops before the run has ended deletes it when it starts again (the run
//! ended then, `interrupted`), so a stateless run never leaves a thread behind.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use rein_protocol::{ThreadId, TurnId};

use super::body::{OnCompletion, RunCreate};
use super::run_api::{self, await_final, Mode};
use super::threads::body_of;
use crate::error::ApiError;
use crate::server::{App, Body};

pub async fn create(
    app: &Arc<App>,
    req: Request<Incoming>,
    mode: Mode,
) -> Result<Response<Body>, ApiError> {
    let run: RunCreate = body_of(app, req).await?;
    // Checked before a thread is made for it: a refused run leaves nothing behind.
    run.check()?;
    run.modes()?;
    super::body::input_parts(&run.input)?;
    let on_completion = run.on_completion.unwrap_or_default();
    let thread = app.runs.create_thread().await?;
    if on_completion == OnCompletion::Delete {
        if let Err(e) = app.runs.records().put_delete(thread).await {
            delete(app, thread).await;
            return Err(e.into());
        }
    }
    let (response, turn) = match run_api::start(app, thread, run, mode).await {
        Ok(started) => started,
        Err(e) => {
            // Nothing ran on it: the thread goes, whatever `on_completion` said.
            delete(app, thread).await;
            return Err(e);
        }
    };
    if on_completion == OnCompletion::Delete {
        if mode == Mode::Wait {
            // The answer (the thread's values) is made: the thread can go first.
            delete(app, thread).await;
        } else {
            let app = Arc::clone(app);
            tokio::spawn(async move { delete_after(&app, thread, turn).await });
        }
    }
    Ok(response)
}

async fn delete_after(app: &App, thread: ThreadId, turn: TurnId) {
    await_final(app, thread, turn).await;
    delete(app, thread).await;
}

/// Unload the thread and archive it, then drop its records; a failure is logged (the
/// thread stays, listed, and its delete record with it: the next start tries again).
async fn delete(app: &App, thread: ThreadId) {
    if !app.runs.unload_idle(thread).await {
        tracing::warn!("stateless run's thread {thread} is busy; kept");
        return;
    }
    if let Err(e) = app.runs.kernel().store().archive(thread).await {
        tracing::warn!("deleting stateless run's thread {thread}: {e}");
        return;
    }
    let records = app.runs.records();
    let forgotten = match records.forget_thread(thread).await {
        Ok(()) => records.remove_delete(thread).await,
        Err(e) => Err(e),
    };
    if let Err(e) = forgotten {
        tracing::warn!("dropping the records of deleted thread {thread}: {e}");
    }
}

/// After a restart, before the server takes connections: the stateless runs' threads
/// whose deletion a stop cut off. Their runs ended with that stop, so each goes now.
pub async fn recover(app: &App) {
    let found = match app.runs.records().deletes().await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!("reading the threads to delete: {e}");
            return;
        }
    };
    for record in found {
        delete(app, record.thread).await;
    }
}
