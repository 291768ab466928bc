//! Requests that carry images go to a model that reads them: the thread's model when the
//! catalog knows it does (or knows nothing of it and no other is configured), else the
//! configured multimodal model. Decided when the turn starts, applied at each step whose
//! history holds an image, and recorded like any model choice: the step's fingerprint
//! names the model the request went to.

use std::sync::Arc;

use rein_protocol::{ErrorCode, InputPart, Item};

use super::step::StepContext;
use super::{Fallback, TaskOutcome};
use crate::model::ModelCatalog;

/// Where a request carrying images goes.
#[derive(Clone)]
pub(crate) enum Vision {
    /// The thread's model: it reads images, or nothing is known and nothing else is set.
    Primary,
    /// The multimodal model.
    Switch(Fallback),
    /// No model that reads images: the thread's model is known not to.
    Refuse { model: String },
}

impl Vision {
    pub(crate) fn for_model(models: &dyn ModelCatalog, model: &str) -> Self {
        let images = models.traits(model).images;
        if images == Some(true) {
            return Vision::Primary;
        }
        let multimodal = models.multimodal_for(model).and_then(|name| {
            let client = models.client(&name).ok()?;
            Some(Fallback {
                model: name,
                client,
            })
        });
        match (multimodal, images) {
            (Some(m), _) => Vision::Switch(m),
            (None, Some(false)) => Vision::Refuse {
                model: model.to_owned(),
            },
            (None, _) => Vision::Primary,
        }
    }

    /// Point `step` at the model for `history`; a failed turn when none can read it.
    pub(crate) fn route(
        &self,
        step: &mut StepContext,
        history: &[Arc<Item>],
    ) -> Result<(), TaskOutcome> {
        if !history.iter().any(|i| carries_image(i)) {
            return Ok(());
        }
        match self {
            Vision::Primary => Ok(()),
            Vision::Switch(m) => {
                if step.model_name != m.model {
                    tracing::info!(from = %step.model_name, to = %m.model, "the request carries an image: using the multimodal model");
                }
                step.model_name.clone_from(&m.model);
                step.model = Arc::clone(&m.client);
                // The fallback was chosen for the thread's model and may not read images.
                step.fallback = None;
                Ok(())
            }
            Vision::Refuse { model } => Err(TaskOutcome::Failed {
                code: ErrorCode::ModelBadRequest,
                message: format!(
                    "the input carries an image but model `{model}` does not read images: \
                     set `multimodal_model` (in config.toml, a profile, or REIN_MULTIMODAL_MODEL) \
                     to a model that does, or mark the model with \
                     [models.\"{model}\"] input_modalities = [\"text\", \"image\"]"
                ),
            }),
        }
    }
}

fn carries_image(item: &Item) -> bool {
    match item {
        Item::UserMessage { content, .. } => {
            content.iter().any(|p| matches!(p, InputPart::Image { .. }))
        }
        // Tool results are text: an MCP image block reaches the model as a line of text.
        _ => false,
    }
}
