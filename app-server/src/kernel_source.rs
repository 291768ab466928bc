//! The kernel a connection works on, possibly still being built. Building it (reading the
//! configuration, the model catalog, probing the command sandbox) takes milliseconds that
//! a client should not wait for before `initialize` is answered: that answer needs only
//! rein's home.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt, Shared};
use rein_bootstrap::Kernel;

type Ready = Shared<BoxFuture<'static, Result<Arc<Kernel>, Arc<str>>>>;

#[derive(Clone)]
pub struct KernelSource {
    home: PathBuf,
    ready: Ready,
}

impl KernelSource {
    pub fn ready(kernel: Arc<Kernel>) -> Self {
        let home = kernel.home.clone();
        Self {
            home,
            ready: futures::future::ready(Ok(kernel)).boxed().shared(),
        }
    }

    /// Build the kernel on a blocking thread, starting now. `build`'s error is what every
    /// request will be answered with if it fails.
    pub fn building(
        home: PathBuf,
        build: impl FnOnce() -> Result<Kernel, String> + Send + 'static,
    ) -> Self {
        let task = tokio::task::spawn_blocking(build);
        let ready = async move {
            match task.await {
                Ok(Ok(kernel)) => Ok(Arc::new(kernel)),
                Ok(Err(e)) => Err(Arc::from(e.as_str())),
                Err(e) => Err(Arc::from(
                    format!("building the kernel panicked: {e}").as_str(),
                )),
            }
        }
        .boxed()
        .shared();
        Self { home, ready }
    }

    pub fn home(&self) -> &PathBuf {
        &self.home
    }

    pub async fn get(&self) -> Result<Arc<Kernel>, Arc<str>> {
        self.ready.clone().await
    }
}
