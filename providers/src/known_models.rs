//! What rein knows of well-known models without being told: the reasoning efforts each
//! accepts and whether it reads images (as OpenAI documents them). `[models.NAME]` in the
//! configuration refines or adds to it; a model in neither is tried with whatever is
//! asked (any effort, images sent as they are).

use rein_config::ModelToml;
use rein_core::model::ModelTraits;
use rein_protocol::ReasoningEffort;

/// One known model: its name, its efforts, whether it reads images.
struct Known {
    name: &'static str,
    efforts: &'static [ReasoningEffort],
    images: bool,
}

const GPT5: &[ReasoningEffort] = &[
    ReasoningEffort::MINIMAL,
    ReasoningEffort::LOW,
    ReasoningEffort::MEDIUM,
    ReasoningEffort::HIGH,
];
const GPT5_CODEX: &[ReasoningEffort] = &[
    ReasoningEffort::LOW,
    ReasoningEffort::MEDIUM,
    ReasoningEffort::HIGH,
];
const GPT51: &[ReasoningEffort] = &[
    ReasoningEffort::NONE,
    ReasoningEffort::LOW,
    ReasoningEffort::MEDIUM,
    ReasoningEffort::HIGH,
];
const GPT51_CODEX_MAX: &[ReasoningEffort] = &[
    ReasoningEffort::LOW,
    ReasoningEffort::MEDIUM,
    ReasoningEffort::HIGH,
    ReasoningEffort::XHIGH,
];
const GPT52: &[ReasoningEffort] = &[
    ReasoningEffort::NONE,
    ReasoningEffort::LOW,
    ReasoningEffort::MEDIUM,
    ReasoningEffort::HIGH,
    ReasoningEffort::XHIGH,
];

const KNOWN: &[Known] = &[
    Known {
        name: "gpt-5",
        efforts: GPT5,
        images: true,
    },
    Known {
        name: "gpt-5-mini",
        efforts: GPT5,
        images: true,
    },
    Known {
        name: "gpt-5-nano",
        efforts: GPT5,
        images: true,
    },
    Known {
        name: "gpt-5-codex",
        efforts: GPT5_CODEX,
        images: true,
    },
    Known {
        name: "gpt-5.1",
        efforts: GPT51,
        images: true,
    },
    Known {
        name: "gpt-5.1-codex",
        efforts: GPT5_CODEX,
        images: true,
    },
    Known {
        name: "gpt-5.1-codex-max",
        efforts: GPT51_CODEX_MAX,
        images: true,
    },
    Known {
        name: "gpt-5.2",
        efforts: GPT52,
        images: true,
    },
];

/// What is known of `model`: the built-in entry, refined by its `[models.NAME]` table.
pub fn traits(model: &str, configured: Option<&ModelToml>) -> ModelTraits {
    let mut traits =
        KNOWN
            .iter()
            .find(|k| k.name == model)
            .map_or_else(ModelTraits::default, |k| ModelTraits {
                efforts: Some(k.efforts.to_vec()),
                images: Some(k.images),
            });
    if let Some(t) = configured {
        if let Some(efforts) = &t.reasoning_efforts {
            traits.efforts = Some(efforts.clone());
        }
        if let Some(modalities) = &t.input_modalities {
            traits.images = Some(modalities.iter().any(|m| m == "image"));
        }
    }
    traits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_refines_the_built_in_entry() {
        assert_eq!(traits("gpt-5", None).images, Some(true));
        assert_eq!(traits("qwen3", None), ModelTraits::default());
        let text_only = ModelToml {
            input_modalities: Some(vec!["text".into()]),
            reasoning_efforts: Some(vec![ReasoningEffort::NONE]),
        };
        assert_eq!(
            traits("gpt-5", Some(&text_only)),
            ModelTraits {
                efforts: Some(vec![ReasoningEffort::NONE]),
                images: Some(false),
            }
        );
    }
}
