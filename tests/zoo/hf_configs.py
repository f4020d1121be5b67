"""Per-model-type fixes and baked CPU-check results for hf_models.py.

CONFIG_OVERRIDES: model_type (or "type/task") -> {path: value} applied to the
generically shrunk config dict.  A path is dotted ("text_config.hidden_size");
a leading "**" applies the rest of the path wherever its first component
occurs at any depth ("**rope_parameters.mrope_section").

INPUT_OVERRIDES: model_type (or "type/task") -> spec for hf_models._make_inputs:
  seq (int), samples (int), frames (int), hw ((h, w)), video (bool),
  features_last (bool), also (names to add: "input_ids"/"pixel_values"),
  extra {name: value or fn(generator, config, inputs)}, drop (names), kind.
"""
from __future__ import annotations

_VOCAB, _IMG = 128, 32  # keep in sync with hf_models.VOCAB / IMG

# Generic shrink targets: an int config field with this name (at any depth) is
# lowered to the target if larger.
INT_TARGETS = {
    # widths
    "hidden_size": 64, "d_model": 64, "n_embd": 64, "embed_dim": 32, "dim": 64, "model_dim": 64,
    "intermediate_size": 128, "ffn_dim": 128, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128,
    "d_ff": 128, "n_inner": 128, "mlp_dim": 128, "ffn_hidden_size": 128, "hidden_dim": 64,
    "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, "expert_intermediate_size": 32,
    "projection_dim": 32, "out_hidden_size": 64, "projector_hidden_size": 64, "embedding_size": 32,
    "embedding_dim": 32, "text_hidden_size": 64, "vision_hidden_size": 64, "encoder_hidden_size": 64,
    "decoder_hidden_size": 64, "output_hidden_size": 64, "pooler_output_size": 64,
    "word_embed_proj_dim": 64, "hidden_size_per_layer_input": 16, "fusion_hidden_size": 32,
    "classifier_proj_size": 32, "xvector_output_dim": 32, "num_filters": 16,
    "latent_dim": 16, "rotary_dim": 8,
    # depth
    "num_hidden_layers": 2, "num_layers": 2, "n_layer": 2, "n_layers": 2, "encoder_layers": 2,
    "decoder_layers": 2, "depth": 2, "num_decoder_layers": 2, "num_encoder_layers": 2,
    "max_window_layers": 2, "first_k_dense_replace": 1,
    # heads
    "num_attention_heads": 4, "num_heads": 4, "n_head": 4, "n_heads": 4, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4, "num_key_value_heads": 2, "num_kv_heads": 2, "n_kv_heads": 2,
    "head_dim": 16, "d_kv": 16, "kv_channels": 16, "attention_head_dim": 16,
    "kv_lora_rank": 16, "q_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
    "v_head_dim": 16, "qk_head_dim": 16, "index_head_dim": 16, "index_n_heads": 4, "index_topk": 16,
    "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_value_heads": 4,
    "linear_num_key_heads": 2, "linear_head_dim": 16, "linear_num_heads": 4,
    "swa_num_attention_heads": 4, "swa_head_dim": 16, "query_pre_attn_scalar": 16,
    # ssm
    "mamba_d_state": 16, "state_size": 16, "ssm_state_size": 16, "mamba_n_heads": 4, "mamba_head_dim": 16,
    "time_step_rank": 8, "mamba_d_head": 16,
    # experts
    "num_experts": 4, "n_routed_experts": 4, "num_local_experts": 4, "moe_num_experts": 4,
    "num_experts_per_tok": 2, "moe_k": 2, "moe_topk": 2, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
    # vocab / positions
    "vocab_size": _VOCAB, "vocab_size_per_layer_input": _VOCAB, "vocab_offset": _VOCAB,
    "max_position_embeddings": 128, "n_positions": 128, "max_target_positions": 64,
    "max_source_positions": 16, "sliding_window": 8, "sliding_window_size": 8, "local_attention": 8,
    "max_2d_position_embeddings": 128, "rel_extent": 8, "chunk_size": 8,
    # vision / audio
    "image_size": _IMG, "num_mel_bins": 16, "num_queries": 8, "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4, "mm_tokens_per_image": 4, "image_seq_length": 4,
    "num_image_tokens": 4, "num_groups": 4, "emb_dim": 64, "d_latents": 64, "num_latents": 8, "num_self_attends_per_block": 1,
    "num_self_attention_heads": 2, "num_cross_attention_heads": 1, "entity_vocab_size": 16,
    "entity_emb_size": 32, "pred_hidden_size": 64, "pred_num_hidden_layers": 2, "pred_num_attention_heads": 4,
    "encoder_hash_byte_group_vocab": 64, "zero_expert_num": 0, "expert_ffn_hidden_size": 32,
    "upsample_initial_channel": 32, "num_hidden_groups": 1,
}
# list-valued fields: ("widths" scaled down, "depths" -> 1 per stage, "heads" -> 1,2,4...)
LIST_WIDTHS = {"embed_dim", "hidden_sizes", "embed_dim_per_stage", "neck_hidden_sizes", "conv_dim", "tdnn_dim",
                "stage_out_channels", "stage_in_channels", "stage_mid_channels", "backbone_channel_list",
                "encoder_in_channels", "decoder_in_channels"}
LIST_DEPTHS = {"depths", "blocks_per_stage", "stage_num_blocks", "stage_numb_of_layers"}
LIST_HEADS = {"num_heads", "num_attention_heads", "num_attention_heads_per_stage"}

_TINY_RESNET = {"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16, 32, 64, 128],
                "depths": [1, 1, 1, 1], "layer_type": "basic", "out_indices": [1, 2, 3, 4]}
_MROPE = {"**rope_parameters.mrope_section": [2, 3, 3]}
_MROPE_HALF = {"**rope_parameters.mrope_section": [1, 1, 2]}
_EFFNET = {"width_coefficient": 0.25, "depth_coefficient": 0.1, "hidden_dim": 320}

CONFIG_OVERRIDES: dict[str, dict] = {
    "gpt2/token-classification": {"classifier_dropout": 0.0},  # head falls back to p=0.1 otherwise
    "gpt_neo": {"attention_types": [[["global", "local"], 1]], "window_size": 8},
    "esmc": {"num_key_value_heads": 4},
    "llava": {"also": ("pixel_values",), "image_tokens": 4, "kind": "tokens+image"},
    "seggpt": {"num_hidden_layers": 4, "merge_index": 1, "intermediate_hidden_state_indices": [2, 3]},
    "reformer": {"axial_pos_shape": [4, 4], "axial_pos_embds_dim": [16, 48], "max_position_embeddings": 16,
                 "local_attn_chunk_length": 4, "lsh_attn_chunk_length": 4, "num_buckets": 4,
                 "attention_head_size": 16, "attn_layers": ["local", "local"], "num_hidden_layers": 2,
                 "is_decoder": True},
    "squeezebert": {"embedding_size": 64},
    "perceiver": {"max_position_embeddings": 12},
    "audio-spectrogram-transformer": {"max_length": 32, "num_mel_bins": 16},
    "falcon_h1": {"mamba_d_ssm": 128, "mamba_n_heads": 8, "mamba_d_head": 16},
    "dory": {"num_hidden_layers": 3, "n_input_layers": 1, "n_recurrent_layers": 1, "n_output_layers": 1},
    "efficientloftr": {"hidden_size": 256},
    "fun_asr_nano": {"adaptor_config.intermediate_size": 16},
    "hy_v4_vl": _MROPE_HALF, "hy_v4_vl_text": _MROPE_HALF,
    "nemo_speechlm": {"head_config.audio_hidden_size": 64},
    "nemotron3_diarization": {"head_config.audio_hidden_size": 64},
    "pocket_tts": {"flow_head_config.condition_dim": 64},
    "gradium_phonon_tts": {"flow_head_config.condition_dim": 64},
    "efficientnet": dict(_EFFNET, hidden_dim=320),
    "align": {"vision_config." + k: v for k, v in _EFFNET.items()},
    **{t: {"backbone_config": dict(_TINY_RESNET), "use_timm_backbone": False, "use_pretrained_backbone": False,
           "backbone": None}
       for t in ("detr", "conditional_detr", "dab-detr", "table-transformer", "deformable_detr")},
    **{t: _MROPE for t in ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text", "colqwen2",
                           "paddleocr_vl", "glm4v", "glm4v_text", "glm46v", "glm_ocr", "glm_ocr_text", "glmga",
                           "glm_image", "glm_image_text")},
    **{t: _MROPE_HALF for t in ("glm4v_moe", "glm4v_moe_text")},
}


def _like_pixels(g, cfg, x):
    import torch

    return torch.randn(x["pixel_values"].shape, generator=g)


def _siglip2_patches(g, cfg, x):
    import torch

    vc = getattr(cfg, "vision_config", cfg)
    return torch.randn(x["input_ids"].shape[0] if "input_ids" in x else 2, 4,
                       vc.num_channels * vc.patch_size ** 2, generator=g)


def _ones_b4(g, cfg, x):
    import torch

    return torch.ones(2, 4, dtype=torch.long)


def _grid_2x2(g, cfg, x):
    import torch

    return torch.tensor([[2, 2], [2, 2]])


def _ast_spectrogram(g, cfg, x):
    import torch

    return torch.randn(2, cfg.max_length, cfg.num_mel_bins, generator=g)


INPUT_OVERRIDES: dict[str, dict] = {
    "siglip2": {"also": ("input_ids",), "extra": {"pixel_values": _siglip2_patches,
                "pixel_attention_mask": _ones_b4, "spatial_shapes": _grid_2x2}},
    "siglip2_vision_model": {"extra": {"pixel_values": _siglip2_patches,
                             "pixel_attention_mask": _ones_b4, "spatial_shapes": _grid_2x2}},
    "audio-spectrogram-transformer": {"extra": {"input_values": _ast_spectrogram}},
    "reformer": {"seq": 16},
    "wav2vec2/audio-xvector": {"samples": 16000},
    "llava": {"also": ("pixel_values",), "image_tokens": 4, "kind": "tokens+image"},
    "seggpt": {"extra": {"prompt_pixel_values": _like_pixels, "prompt_masks": _like_pixels}},
}


def _set_path(d: dict, path: str, val) -> None:
    if path.startswith("**"):
        first, _, rest = path[2:].partition(".")
        hits = []

        def walk(x):
            if isinstance(x, dict):
                for k, v in x.items():
                    if k == first and isinstance(v, dict):
                        hits.append(v)
                    else:
                        walk(v)
        walk(d)
        for h in hits:
            _set_path(h, rest, val)
        return
    *parents, leaf = path.split(".")
    cur = d
    for p in parents:
        if not isinstance(cur.get(p), dict):
            cur[p] = {}
        cur = cur[p]
    cur[leaf] = val


def apply_config_overrides(model_type: str, task: str, d: dict) -> None:
    for key in (model_type, f"{model_type}/{task}"):
        for path, val in CONFIG_OVERRIDES.get(key, {}).items():
            _set_path(d, path, val)


def input_overrides(model_type: str, task: str) -> dict:
    spec = dict(INPUT_OVERRIDES.get(model_type, {}))
    spec.update(INPUT_OVERRIDES.get(f"{model_type}/{task}", {}))
    return spec


# name -> None (passed the CPU check) or failure reason; generated by
# `python tests/zoo/hf_models.py --check --out FILE` (transformers 5.24.0, torch 2.14.1)
# and baked here by a small script.  Do not edit by hand; re-run the check.
_PASSED = """
hf/afmoe/causal-lm=tokens hf/aimv2_vision_model/image=image hf/albert/masked-lm=tokens
hf/altclip/zero-shot-image-classification=tokens+image hf/apertus/causal-lm=tokens
hf/apertus1p5_text/causal-lm=tokens hf/arcee/causal-lm=tokens hf/aria/image-text-to-text=tokens
hf/aria_text/causal-lm=tokens hf/audio-spectrogram-transformer/audio-classification=audio
hf/audioflamingo3/seq2seq-lm=tokens hf/axk1/causal-lm=tokens hf/axk2/causal-lm=tokens
hf/aya_vision/image-text-to-text=tokens hf/bailing_hybrid/causal-lm=tokens hf/bamba/causal-lm=tokens
hf/bart/seq2seq-lm=tokens hf/beam/causal-lm=tokens hf/beit/image-classification=image
hf/bert-generation/causal-lm=tokens hf/bert/masked-lm=tokens hf/bert/multiple-choice=tokens
hf/bert/question-answering=tokens hf/bert/sequence-classification=tokens hf/bert/token-classification=tokens
hf/big_bird/masked-lm=tokens hf/bigbird_pegasus/seq2seq-lm=tokens hf/biogpt/causal-lm=tokens
hf/bit/image-classification=image hf/bitnet/causal-lm=tokens hf/blenderbot-small/seq2seq-lm=tokens
hf/blenderbot/seq2seq-lm=tokens hf/blip/zero-shot-image-classification=tokens+image hf/bloom/causal-lm=tokens
hf/camembert/masked-lm=tokens hf/canary/speech-seq2seq=audio hf/canine/sequence-classification=tokens
hf/chinese_clip/zero-shot-image-classification=tokens+image hf/chinese_clip_vision_model/base=image
hf/clip/image-classification=image hf/clip/zero-shot-image-classification=tokens+image
hf/clip_text_model/text-encoding=tokens hf/clip_vision_model/base=image
hf/clipseg/zero-shot-image-classification=tokens+image hf/codegen/causal-lm=tokens hf/cohere/causal-lm=tokens
hf/cohere2/causal-lm=tokens hf/cohere2_moe/causal-lm=tokens hf/cohere2_vision/image-text-to-text=tokens
hf/cohere_asr/speech-seq2seq=audio hf/colmodernvbert/pretraining=tokens hf/colpali/pretraining=tokens
hf/colqwen2/pretraining=tokens hf/conditional_detr/object-detection=image hf/convbert/masked-lm=tokens
hf/convnext/image-classification=image hf/convnextv2/image-classification=image
hf/cosmos3_edge/image-text-to-text=tokens hf/cosmos3_edge_text/base=tokens
hf/cosmos3_omni/image-text-to-text=tokens hf/cpmant/causal-lm=tokens hf/ctrl/causal-lm=tokens
hf/cvt/image-classification=image hf/cwm/causal-lm=tokens hf/dab-detr/object-detection=image
hf/data2vec-audio/ctc=audio hf/data2vec-text/masked-lm=tokens hf/data2vec-vision/image-classification=image
hf/deberta-v2/masked-lm=tokens hf/deberta/masked-lm=tokens hf/deepseek_v3/causal-lm=tokens
hf/deepseek_v32/causal-lm=tokens hf/deepseek_v4/causal-lm=tokens hf/deepseek_vl/image-text-to-text=tokens
hf/deepseek_vl_hybrid/image-text-to-text=tokens hf/deformable_detr/object-detection=image
hf/deit/image-classification=image hf/detr/object-detection=image hf/diffllama/causal-lm=tokens
hf/dinov2/image-classification=image hf/dinov2_with_registers/image-classification=image
hf/dinov3_convnext/backbone=image hf/distilbert/masked-lm=tokens hf/distilbert/question-answering=tokens
hf/doge/causal-lm=tokens hf/donut-swin/image-classification=image hf/dpr/base=tokens hf/dpt/image=image
hf/efficientnet/image-classification=image hf/electra/masked-lm=tokens hf/embedding_gemma2/base=tokens
hf/embedding_gemma2_text/base=tokens hf/emu3/causal-lm=tokens hf/encoder-decoder/seq2seq-lm=tokens
hf/ernie/masked-lm=tokens hf/ernie4_5/causal-lm=tokens hf/ernie4_5_moe/causal-lm=tokens
hf/esmc/masked-lm=tokens hf/eurobert/masked-lm=tokens hf/evolla/image-text-to-text=tokens
hf/exaone/causal-lm=tokens hf/exaone4/causal-lm=tokens hf/exaone4_5/image-text-to-text=tokens
hf/exaone_moe/causal-lm=tokens hf/falcon/causal-lm=tokens hf/falcon_h1/causal-lm=tokens
hf/falcon_mamba/causal-lm=tokens hf/flaubert/masked-lm=tokens hf/flava/pretraining=tokens
hf/flex_olmo/causal-lm=tokens hf/flint/causal-lm=tokens hf/florence2/image-text-to-text=tokens
hf/fnet/masked-lm=tokens hf/focalnet/image-classification=image hf/fsmt/seq2seq-lm=tokens
hf/fun_asr_nano/speech-seq2seq=tokens hf/funnel/masked-lm=tokens hf/fuyu/causal-lm=tokens
hf/gemma/causal-lm=tokens hf/gemma2/causal-lm=tokens hf/gemma3/causal-lm=tokens
hf/gemma3_text/causal-lm=tokens hf/gemma4/causal-lm=tokens hf/gemma4_audio/base=audio
hf/gemma4_text/causal-lm=tokens hf/gemma4_unified/causal-lm=tokens hf/gemma4_unified_text/causal-lm=tokens
hf/git/base=tokens hf/glm/causal-lm=tokens hf/glm4/causal-lm=tokens hf/glm46v/image-text-to-text=tokens
hf/glm4_moe/causal-lm=tokens hf/glm4_moe_lite/causal-lm=tokens hf/glm4v/image-text-to-text=tokens
hf/glm4v_moe/image-text-to-text=tokens hf/glm4v_moe_text/base=tokens hf/glm4v_text/base=tokens
hf/glm5_next/image-text-to-text=tokens hf/glm5_next_text/base=tokens hf/glm_image/base=tokens
hf/glm_image_text/base=tokens hf/glm_moe_dsa/causal-lm=tokens hf/glm_ocr/image-text-to-text=tokens
hf/glm_ocr_text/base=tokens hf/glmasr/seq2seq-lm=tokens hf/glmasr_encoder/base=audio
hf/glmga/image-text-to-text=tokens hf/glpn/depth-estimation=image hf/got_ocr2/causal-lm=tokens
hf/gpt-sw3/causal-lm=tokens hf/gpt2/causal-lm=tokens hf/gpt2/sequence-classification=tokens
hf/gpt2/token-classification=tokens hf/gpt_bigcode/causal-lm=tokens hf/gpt_neo/causal-lm=tokens
hf/gpt_neox/causal-lm=tokens hf/gpt_neox_japanese/causal-lm=tokens hf/gpt_oss/causal-lm=tokens
hf/gptj/causal-lm=tokens hf/gradium_phonon_tts/text-to-waveform=tokens hf/granite/causal-lm=tokens
hf/granite_docling/image-text-to-text=tokens hf/granite_docling_text/base=tokens
hf/granite_speech/seq2seq-lm=tokens hf/granite_speech_plus/seq2seq-lm=tokens hf/granite_swa/causal-lm=tokens
hf/granitemoe/causal-lm=tokens hf/granitemoe_swa/causal-lm=tokens hf/granitemoehybrid/causal-lm=tokens
hf/granitemoeshared/causal-lm=tokens hf/gte/masked-lm=tokens hf/helium/causal-lm=tokens
hf/hgnet_v2/image-classification=image hf/hiera/image-classification=image
hf/higgs_audio_v2/text-to-waveform=tokens hf/hrm_text/causal-lm=tokens hf/hubert/ctc=audio
hf/hunyuan_v1_dense/causal-lm=tokens hf/hunyuan_v1_moe/causal-lm=tokens hf/hy_v3/causal-lm=tokens
hf/hy_v4/causal-lm=tokens hf/hy_v4_vl/image-text-to-text=tokens hf/hy_v4_vl_text/base=tokens
hf/hyperclovax/causal-lm=tokens hf/hyperclovax_vision_v2/image-text-to-text=tokens hf/ibert/masked-lm=tokens
hf/idefics2/image-text-to-text=tokens hf/idefics3/image-text-to-text=tokens
hf/idefics3_vision/base=tokens+image hf/ijepa/image-classification=image
hf/imagegpt/image-classification=tokens hf/internlm3/causal-lm=tokens hf/internvl/image-text-to-text=tokens
hf/internvl_vision/base=image hf/iquestcoder/causal-lm=tokens hf/jais2/causal-lm=tokens
hf/jamba/causal-lm=tokens hf/jetmoe/causal-lm=tokens hf/jina_embeddings_v3/masked-lm=tokens
hf/kimi_k25/image-text-to-text=tokens hf/kimi_linear/causal-lm=tokens hf/kolibri1/causal-lm=tokens
hf/kosmos-2.5/image-text-to-text=tokens hf/laguna/causal-lm=tokens hf/lara_mini/causal-lm=tokens
hf/lasr_ctc/ctc=audio hf/lasr_encoder/base=audio hf/layoutlm/masked-lm=tokens hf/led/seq2seq-lm=tokens
hf/levit/image-classification=image hf/lfm2/causal-lm=tokens hf/lfm2_vl/image-text-to-text=tokens
hf/lfm3/causal-lm=tokens hf/lfm3_vl/image-text-to-text=tokens hf/lighton_ocr/image-text-to-text=tokens
hf/llama/causal-lm=tokens hf/llama/question-answering=tokens hf/llama/sequence-classification=tokens
hf/llama4/causal-lm=tokens hf/llama4_text/causal-lm=tokens hf/llava/image-text-to-text=tokens+image
hf/llava_next/image-text-to-text=tokens hf/llava_next_video/image-text-to-text=tokens
hf/llava_onevision/image-text-to-text=tokens hf/longformer/masked-lm=tokens hf/longt5/seq2seq-lm=tokens
hf/luke/masked-lm=tokens hf/m2m_100/seq2seq-lm=tokens hf/mamba/causal-lm=tokens hf/mamba2/causal-lm=tokens
hf/marian/base=tokens hf/markuplm/sequence-classification=tokens hf/maskformer-swin/backbone=image
hf/maskformer/base=image hf/mbart/seq2seq-lm=tokens hf/megatron-bert/masked-lm=tokens
hf/mellum/causal-lm=tokens hf/metaclip_2/zero-shot-image-classification=tokens+image hf/mgp-str/base=image
hf/mimo_v2_flash/causal-lm=tokens hf/minicpm3/causal-lm=tokens hf/minicpm_ocr/image-text-to-text=tokens
hf/minicpmv4_6/image-text-to-text=tokens hf/minicpmv4_7/image-text-to-text=tokens hf/minimax/causal-lm=tokens
hf/minimax_m2/causal-lm=tokens hf/minimax_m3_vl/image-text-to-text=tokens
hf/minimax_m3_vl_text/causal-lm=tokens hf/ministral/causal-lm=tokens hf/ministral3/causal-lm=tokens
hf/mistral/causal-lm=tokens hf/mistral3/image-text-to-text=tokens hf/mistral4/sequence-classification=tokens
hf/mistral_large4/image-text-to-text=tokens hf/mistral_large4_text/base=tokens hf/mixtral/causal-lm=tokens
hf/mlcd/image=image hf/mlcd_vision_model/image=image hf/mllama/causal-lm=tokens
hf/mobilebert/masked-lm=tokens hf/mobilenet_v1/image-classification=image
hf/mobilenet_v2/image-classification=image hf/mobilevit/image-classification=image
hf/mobilevit/semantic-segmentation=image hf/modernbert-decoder/causal-lm=tokens
hf/modernbert/masked-lm=tokens hf/modernvbert/masked-lm=tokens hf/molmo2/image-text-to-text=tokens
hf/molmo2_text/text-encoding=tokens hf/moonshine/speech-seq2seq=audio hf/moshi/causal-lm=tokens
hf/moss_transcribe_diarize/seq2seq-lm=tokens hf/moss_transcribe_diarize_audio/base=audio
hf/mpnet/masked-lm=tokens hf/mpt/causal-lm=tokens hf/mra/masked-lm=tokens hf/mt5/seq2seq-lm=tokens
hf/muse_glimmer/image-text-to-text=tokens hf/muse_glimmer_text/base=tokens hf/muse_spark_text/base=tokens
hf/musicflamingo/seq2seq-lm=tokens hf/mvp/seq2seq-lm=tokens hf/nanochat/causal-lm=tokens
hf/nemotron_h/causal-lm=tokens hf/nemotron_h_omni/image-text-to-text=tokens hf/neomme/masked-lm=tokens
hf/nllb-moe/seq2seq-lm=tokens hf/nomic_bert/masked-lm=tokens hf/nystromformer/masked-lm=tokens
hf/olmo/causal-lm=tokens hf/olmo2/causal-lm=tokens hf/olmo3/causal-lm=tokens hf/olmo_hybrid/causal-lm=tokens
hf/olmoe/causal-lm=tokens hf/omniasr/seq2seq-lm=tokens hf/openai-gpt/causal-lm=tokens
hf/openai_privacy_filter/token-classification=tokens hf/opt/causal-lm=tokens
hf/ovis2/image-text-to-text=tokens hf/paddleocr_vl/image-text-to-text=tokens
hf/paligemma/image-text-to-text=tokens hf/parakeet_ctc/ctc=audio hf/parakeet_encoder/base=audio
hf/patchtsmixer/time-series-classification=features hf/patchtst/time-series-classification=features
hf/pegasus/seq2seq-lm=tokens hf/pegasus_x/seq2seq-lm=tokens hf/perceiver/masked-lm=tokens
hf/persimmon/causal-lm=tokens hf/phi/causal-lm=tokens hf/phi3/causal-lm=tokens
hf/phi4_multimodal/causal-lm=tokens hf/phimoe/causal-lm=tokens hf/pixio/backbone=image hf/pixtral/base=image
hf/plbart/seq2seq-lm=tokens hf/pocket_tts/text-to-waveform=tokens hf/poolformer/image-classification=image
hf/pop2piano/speech-seq2seq=tokens hf/pp_chart2table/image-text-to-text=tokens
hf/pp_lcnet/image-classification=image hf/pp_lcnet_v3/backbone=image hf/prophetnet/seq2seq-lm=tokens
hf/pvt/image-classification=image hf/pvt_v2/image-classification=image
hf/qianfan_ocr/image-text-to-text=tokens hf/qianfan_ocr_vision/base=image hf/qwen2/causal-lm=tokens
hf/qwen2_5_vl/image-text-to-text=tokens hf/qwen2_5_vl_text/base=tokens hf/qwen2_audio/seq2seq-lm=tokens
hf/qwen2_audio_encoder/base=audio hf/qwen2_moe/causal-lm=tokens hf/qwen2_vl/image-text-to-text=tokens
hf/qwen2_vl_text/base=tokens hf/qwen3/causal-lm=tokens hf/qwen3_5/causal-lm=tokens
hf/qwen3_5_moe/causal-lm=tokens hf/qwen3_5_moe_text/causal-lm=tokens hf/qwen3_5_text/causal-lm=tokens
hf/qwen3_asr/seq2seq-lm=tokens hf/qwen3_moe/causal-lm=tokens hf/qwen3_next/causal-lm=tokens
hf/qwen3_vl/image-text-to-text=tokens hf/qwen3_vl_moe/image-text-to-text=tokens
hf/qwen3_vl_moe_text/base=tokens hf/qwen3_vl_text/base=tokens hf/radio/base=image
hf/recurrent_gemma/causal-lm=tokens hf/reformer/causal-lm=tokens hf/regnet/image-classification=image
hf/rembert/masked-lm=tokens hf/resnet/image-classification=image hf/roberta-prelayernorm/masked-lm=tokens
hf/roberta/masked-lm=tokens hf/roberta/token-classification=tokens hf/roc_bert/masked-lm=tokens
hf/roformer/masked-lm=tokens hf/rt_detr_resnet/backbone=image hf/rwkv/causal-lm=tokens
hf/sam3_vision_model/base=image hf/sam3_vit_model/base=image hf/sam_hq_vision_model/base=image
hf/sam_vision_model/base=image hf/sarvam_mla/causal-lm=tokens hf/sarvam_moe/causal-lm=tokens
hf/seamless_m4t/seq2seq-lm=tokens hf/seamless_m4t_v2/seq2seq-lm=tokens hf/seed_oss/causal-lm=tokens
hf/segformer/image-classification=image hf/sew-d/ctc=audio hf/sew/ctc=audio
hf/shieldgemma2/image-text-to-text=tokens hf/siglip/image-classification=image
hf/siglip2/image-classification=tokens+image hf/siglip2_vision_model/base=image
hf/siglip_vision_model/image=image hf/slanext/table-recognition=image hf/smollm3/causal-lm=tokens
hf/smolvlm/image-text-to-text=tokens hf/smolvlm_vision/base=tokens+image hf/solar_open/causal-lm=tokens
hf/speech_to_text/speech-seq2seq=audio hf/speecht5/speech-seq2seq=audio hf/splinter/question-answering=tokens
hf/squeezebert/masked-lm=tokens hf/stablelm/causal-lm=tokens hf/starcoder2/causal-lm=tokens
hf/superpoint/keypoint-detection=image hf/swiftformer/image-classification=image
hf/swin/image-classification=image hf/swin2sr/image=image hf/swinv2/image-classification=image
hf/switch_transformers/seq2seq-lm=tokens hf/t5/question-answering=tokens hf/t5/seq2seq-lm=tokens
hf/t5gemma/seq2seq-lm=tokens hf/t5gemma2/seq2seq-lm=tokens hf/table-transformer/object-detection=image
hf/tapas/masked-lm=tokens hf/timesfm/time-series-prediction=features
hf/timesfm2_5/time-series-prediction=features hf/timesformer/video-classification=video
hf/tipsv2/zero-shot-image-classification=tokens+image hf/tipsv2_text_model/text-encoding=tokens
hf/tipsv2_vision_model/backbone=image hf/trocr/causal-lm=tokens hf/ultrabert/masked-lm=tokens
hf/ultravbert/masked-lm=tokens hf/umt5/seq2seq-lm=tokens hf/unispeech-sat/ctc=audio hf/unispeech/ctc=audio
hf/uvdoc_backbone/backbone=image hf/vaultgemma/causal-lm=tokens hf/video_llama_3/image-text-to-text=tokens
hf/video_llava/image-text-to-text=tokens hf/videomae/video-classification=video
hf/vipllava/image-text-to-text=tokens hf/visual_bert/pretraining=tokens hf/vit/image-classification=image
hf/vit/masked-image-modeling=image hf/vit_mae/pretraining=image hf/vit_msn/image-classification=image
hf/vitdet/backbone=image hf/vitmatte/image-matting=image hf/vitpose/pose-estimation=image
hf/vitpose_backbone/backbone=image hf/vivit/video-classification=video hf/voxtral/seq2seq-lm=tokens
hf/voxtral_encoder/base=audio hf/voxtral_realtime_encoder/base=audio
hf/wav2vec2-conformer/audio-classification=audio hf/wav2vec2/audio-classification=audio
hf/wav2vec2/audio-frame-classification=audio hf/wav2vec2/audio-xvector=audio hf/wav2vec2/ctc=audio
hf/wavlm/ctc=audio hf/whisper/audio-classification=audio hf/whisper/speech-seq2seq=audio
hf/xglm/causal-lm=tokens hf/xlm-roberta-xl/masked-lm=tokens hf/xlm-roberta/masked-lm=tokens
hf/xlm/masked-lm=tokens hf/xlnet/causal-lm=tokens hf/yolos/object-detection=image hf/yoso/masked-lm=tokens
hf/youtu/causal-lm=tokens hf/zamba2/causal-lm=tokens hf/zaya/causal-lm=tokens
""".split()
_FAILED = {
    'hf/aimv2/base': "AttributeError: 'NoneType' object has no attribute 'size'",
    'hf/align/zero-shot-image-classification': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x32 and 8x2)',
    'hf/apertus1p5/image-text-to-text': "config validator 'validate_architecture': ValueError: WavTokenizer uses no projections around the quantizer, so `codebook_dim` (512) must equal `hidde",
    'hf/audioflamingo3_encoder/base': "AttributeError: 'NoneType' object has no attribute 'sum'",
    'hf/autoformer/base': 'ValueError: The `prediction_length` config needs to be specified.',
    'hf/bark/text-to-waveform': "TypeError: _forward_unimplemented() got an unexpected keyword argument 'input_ids'",
    'hf/blip-2/base': "AttributeError: 'bool' object has no attribute 'unsqueeze'",
    'hf/blip-2/image-text-to-text': "AttributeError: 'bool' object has no attribute 'unsqueeze'",
    'hf/blip-2/zero-shot-image-classification': "AttributeError: 'Blip2QFormerLayer' object has no attribute 'intermediate'",
    'hf/blip_2_qformer/base': "TypeError: Blip2QFormerModel.forward() missing 1 required positional argument: 'query_embeds'",
    'hf/blt/base': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (26x64 and 2048x128)',
    'hf/blt/causal-lm': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (26x64 and 2048x128)',
    'hf/bridgetower/base': "AttributeError: 'NoneType' object has no attribute 'type'",
    'hf/bros/base': 'ValueError: You have to specify bbox',
    'hf/bros/token-classification': 'ValueError: You have to specify bbox',
    'hf/chameleon/base': "AttributeError: 'NoneType' object has no attribute 'get'",
    'hf/chameleon/image-text-to-text': "AttributeError: 'NoneType' object has no attribute 'get'",
    'hf/chmv2/depth-estimation': 'IndexError: list index out of range',
    'hf/clap/base': "AttributeError: 'NoneType' object has no attribute 'transpose'",
    'hf/clvp/base': 'TypeError: conv1d() received an invalid combination of arguments - got (NoneType, Parameter, Parameter, tuple, tuple, tuple, int), but expected one of',
    'hf/cohere_compass/base': "KeyError: 'full_attention'",
    'hf/cohere_compass/image-text-to-text': "KeyError: 'full_attention'",
    'hf/cohere_compass_text/base': "KeyError: 'full_attention'",
    'hf/cohere_compass_text/causal-lm': "KeyError: 'full_attention'",
    'hf/cohere_compass_text/sequence-classification': "KeyError: 'full_attention'",
    'hf/cohere_compass_vision/base': "TypeError: CohereCompassVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/cosmos3_edge_vision/base': "TypeError: Cosmos3EdgeVisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/csm/text-to-waveform': 'ValueError: in_channels must be divisible by groups',
    'hf/d_fine/base': 'IndexError: list index out of range',
    'hf/d_fine/object-detection': 'IndexError: list index out of range',
    'hf/dac/base': 'RuntimeError: too large after shrinking (23.1M params)',
    'hf/dbrx/base': "AttributeError: 'DbrxAttentionConfig' object has no attribute 'rope_theta'",
    'hf/dbrx/causal-lm': "AttributeError: 'DbrxAttentionConfig' object has no attribute 'rope_theta'",
    'hf/decision_transformer/base': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x12 and 17x64)',
    'hf/deepseek_ocr2/base': "TypeError: 'NoneType' object is not subscriptable",
    'hf/deepseek_ocr2/image-text-to-text': "TypeError: 'NoneType' object is not subscriptable",
    'hf/deepseek_v2/base': "TypeError: topk(): argument 'k' must be int, not NoneType",
    'hf/deepseek_v2/causal-lm': "TypeError: topk(): argument 'k' must be int, not NoneType",
    'hf/deepseek_v2/sequence-classification': "TypeError: topk(): argument 'k' must be int, not NoneType",
    'hf/deimv2/base': 'IndexError: list index out of range',
    'hf/deimv2/object-detection': 'IndexError: list index out of range',
    'hf/depth_anything/depth-estimation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/depth_pro/depth-estimation': 'ValueError: Image size 32x32 is too small to be scaled with scaled_images_ratios=[0.25, 0.5, 1] when patch_size=384.',
    'hf/depth_pro/image': 'ValueError: Image size 32x32 is too small to be scaled with scaled_images_ratios=[0.25, 0.5, 1] when patch_size=384.',
    'hf/dia/base': "RuntimeError: shape '[2, 9, -1]' is invalid for input of size 24",
    'hf/dia/speech-seq2seq': "RuntimeError: shape '[2, 9, -1]' is invalid for input of size 24",
    'hf/diffusion_gemma/base': "TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'hf/diffusion_gemma/image-text-to-text': "TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'hf/dinat/backbone': 'ImportError: DinatBackbone requires the natten library but it was not found in your environment. You can install it by referring to: shi-labs.com/natt',
    'hf/dinat/image': 'ImportError: DinatModel requires the natten library but it was not found in your environment. You can install it by referring to: shi-labs.com/natten ',
    'hf/dinat/image-classification': 'ImportError: DinatForImageClassification requires the natten library but it was not found in your environment. You can install it by referring to: shi',
    'hf/dinov3_vit/backbone': 'RuntimeError: nondeterministic in train mode (9.313225746154785e-09 vs 0.0)',
    'hf/dinov3_vit/image': 'RuntimeError: nondeterministic in train mode (-3.81842246710562e-09 vs -9.87201964619544e-09)',
    'hf/dory/causal-lm': "config validator 'validate_architecture': ValueError: n_input_layers + n_recurrent_layers + n_output_layers must equal num_hidden_layers",
    'hf/dots1/base': 'TypeError: empty() takes 1 positional argument but 3 were given',
    'hf/dots1/causal-lm': 'TypeError: empty() takes 1 positional argument but 3 were given',
    'hf/dots3_note/causal-lm': "config validator 'validate_architecture': ValueError: adapter_in_dim must match hidden_size",
    'hf/dots3_note_text/base': 'RuntimeError: too large after shrinking (38.8M params)',
    'hf/dots3_note_text/causal-lm': 'RuntimeError: too large after shrinking (38.8M params)',
    'hf/dpt/depth-estimation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/dpt/semantic-segmentation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/edgetam/mask-generation': "TypeError: 'NoneType' object cannot be interpreted as an integer",
    'hf/edgetam_video/base': "TypeError: EdgeTamVideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'hf/edgetam_video/mask-generation': 'RuntimeError: Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8, 8, 64]',
    'hf/edgetam_vision_model/base': "TypeError: 'NoneType' object cannot be interpreted as an integer",
    'hf/efficientloftr/base': 'ValueError: Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)',
    'hf/efficientloftr/keypoint-matching': 'ValueError: Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)',
    'hf/encodec/base': 'ValueError: not enough values to unpack (expected 3, got 2)',
    'hf/eomt/universal-segmentation': 'ImportError: EomtLoss requires the scipy library but it was not found in your environment. You can install it with pip: `pip install scipy`. Please no',
    'hf/eomt_dinov3/universal-segmentation': 'ImportError: EomtDinov3Loss requires the scipy library but it was not found in your environment. You can install it with pip: `pip install scipy`. Ple',
    'hf/ernie4_5_vl_moe/base': 'RuntimeError: The expanded size of the tensor (8) must match the existing size (0) at non-singleton dimension 0. Target sizes: [8]. Tensor sizes: [0]',
    'hf/ernie4_5_vl_moe/image-text-to-text': 'RuntimeError: The expanded size of the tensor (8) must match the existing size (0) at non-singleton dimension 0. Target sizes: [8]. Tensor sizes: [0]',
    'hf/esm/base': "TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'hf/esm/masked-lm': "TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'hf/esm/sequence-classification': "TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'hf/esm/token-classification': "TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'hf/exaone4_5_vision/base': "TypeError: Exaone4_5_VisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/fast_vlm/base': 'RuntimeError: too large after shrinking (122.8M params)',
    'hf/fast_vlm/image-text-to-text': 'RuntimeError: too large after shrinking (122.8M params)',
    'hf/fastspeech2_conformer/text-to-spectrogram': 'ValueError: All labels must be provided to run in training mode.',
    'hf/fastspeech2_conformer_with_hifigan/text-to-waveform': 'ValueError: All labels must be provided to run in training mode.',
    'hf/fun_asr_nano_encoder/base': "TypeError: FunAsrNanoEncoder.forward() missing 1 required positional argument: 'input_features_mask'",
    'hf/gemma3n/base': 'ValueError: The set of layer types producing a cache is different than the set of layer types using them',
    'hf/gemma3n/causal-lm': 'ValueError: The set of layer types producing a cache is different than the set of layer types using them',
    'hf/gemma3n_audio/base': "TypeError: Gemma3nAudioEncoder.forward() missing 1 required positional argument: 'audio_mel_mask'",
    'hf/gemma3n_text/base': 'ValueError: The set of layer types producing a cache is different than the set of layer types using them',
    'hf/gemma3n_text/causal-lm': 'ValueError: The set of layer types producing a cache is different than the set of layer types using them',
    'hf/gemma3n_vision/base': 'RuntimeError: too large after shrinking (294.1M params)',
    'hf/gemma4_assistant/causal-lm': "config validator 'validate_architecture': ValueError: hidden_size_per_layer_input must be 0, got 256",
    'hf/gemma4_unified_assistant/causal-lm': 'ValueError: The set of layer types producing a cache is different than the set of layer types using them',
    'hf/gemma4_vision/base': "TypeError: Gemma4VisionModel.forward() missing 1 required positional argument: 'pixel_position_ids'",
    'hf/git/causal-lm': 'ValueError: Expected input batch_size (12) to match target batch_size (22).',
    'hf/glm4v_moe_vision/base': "TypeError: Glm4vMoeVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/glm4v_vision/base': "TypeError: Glm4vVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/glm5_next_vision/base': "TypeError: Glm5NextVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/glm_image_vision/base': "TypeError: GlmImageVisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/glm_image_vqmodel/base': "TypeError: _forward_unimplemented() got an unexpected keyword argument 'input_ids'",
    'hf/glm_ocr_vision/base': "TypeError: GlmOcrVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/granite4_vision/base': "TypeError: object of type 'NoneType' has no len()",
    'hf/granite4_vision/image-text-to-text': "TypeError: object of type 'NoneType' has no len()",
    'hf/granite_docling_vision/base': "RuntimeError: shape '[2, 2, 0, 256]' is invalid for input of size 512",
    'hf/granite_speech5_ctc/ctc': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x32 and 64x64)',
    'hf/granite_speech5_encoder/base': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x32 and 64x64)',
    'hf/grounding-dino/base': 'RuntimeError: selected index k out of range',
    'hf/grounding-dino/zero-shot-object-detection': 'RuntimeError: selected index k out of range',
    'hf/groupvit/base': 'ValueError: You have to specify pixel_values',
    'hf/higgs_audio_v2_tokenizer/base': 'ImportError: HiggsAudioV2TokenizerModel requires the torchaudio library but it was not found in your environment. Please install it and restart your r',
    'hf/hunyuan_vl/base': "TypeError: object of type 'NoneType' has no len()",
    'hf/hunyuan_vl/image-text-to-text': "TypeError: object of type 'NoneType' has no len()",
    'hf/hunyuan_vl_text/base': "TypeError: object of type 'NoneType' has no len()",
    'hf/hunyuan_vl_vision/base': "TypeError: HunYuanVLVisionTransformer.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/hy_v4_vl_vision/base': "TypeError: HYV4VLVisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/idefics/base': 'ValueError: Exactly 1 of pixel_values, image_encoder_embeddings or perceiver_embeddings has to be not-None.',
    'hf/idefics/image-text-to-text': 'ValueError: Exactly 1 of pixel_values, image_encoder_embeddings or perceiver_embeddings has to be not-None.',
    'hf/informer/base': 'ValueError: The `prediction_length` config needs to be specified.',
    'hf/inkling2/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2/image-text-to-text': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_loop/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_loop/image-text-to-text': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_loop_text/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_loop_text/causal-lm': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_text/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_text/causal-lm': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling2_vision/base': "TypeError: Inkling2VisionModel.forward() missing 1 required positional argument: 'image_grid_thw'",
    'hf/inkling_mm_model/base': "ModuleNotFoundError: No module named 'scipy'",
    'hf/inkling_mm_model/image-text-to-text': "ModuleNotFoundError: No module named 'scipy'",
    'hf/inkling_text/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/inkling_text/causal-lm': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/instructblip/base': "TypeError: InstructBlipModel.forward() missing 1 required positional argument: 'qformer_input_ids'",
    'hf/instructblip/image-text-to-text': "TypeError: InstructBlipForConditionalGeneration.forward() missing 1 required positional argument: 'qformer_input_ids'",
    'hf/instructblipvideo/base': "TypeError: InstructBlipVideoModel.forward() missing 1 required positional argument: 'qformer_input_ids'",
    'hf/instructblipvideo/image-text-to-text': "TypeError: InstructBlipVideoForConditionalGeneration.forward() missing 1 required positional argument: 'qformer_input_ids'",
    'hf/janus/base': 'RuntimeError: too large after shrinking (72.9M params)',
    'hf/janus/image-text-to-text': 'RuntimeError: too large after shrinking (72.9M params)',
    'hf/jev/decision': "TypeError: JevForDecision.forward() missing 3 required positional arguments: 'marks', 'num_options', and 'question_type_ids'",
    'hf/kimi_k25_vision/base': "TypeError: Kimi_K25VisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/kosmos-2/base': 'ValueError: You have to specify either input_ids or inputs_embeds',
    'hf/kosmos-2/image-text-to-text': 'ValueError: You have to specify either input_ids or inputs_embeds',
    'hf/kyutai_speech_to_text/base': 'RuntimeError: The size of tensor a (12) must match the size of tensor b (33) at non-singleton dimension 1',
    'hf/kyutai_speech_to_text/speech-seq2seq': 'ValueError: in_channels must be divisible by groups',
    'hf/layoutlmv2/base': 'ImportError: LayoutLMv2Model requires the detectron2 library but it was not found in your environment. Check out the instructions on the installation ',
    'hf/layoutlmv2/question-answering': 'ImportError: LayoutLMv2Model requires the detectron2 library but it was not found in your environment. Check out the instructions on the installation ',
    'hf/layoutlmv2/sequence-classification': 'ImportError: LayoutLMv2Model requires the detectron2 library but it was not found in your environment. Check out the instructions on the installation ',
    'hf/layoutlmv2/token-classification': 'ImportError: LayoutLMv2Model requires the detectron2 library but it was not found in your environment. Check out the instructions on the installation ',
    'hf/layoutlmv3/base': 'RuntimeError: The size of tensor a (64) must match the size of tensor b (768) at non-singleton dimension 2',
    'hf/layoutlmv3/question-answering': 'RuntimeError: The size of tensor a (64) must match the size of tensor b (768) at non-singleton dimension 2',
    'hf/layoutlmv3/sequence-classification': 'RuntimeError: The size of tensor a (64) must match the size of tensor b (768) at non-singleton dimension 2',
    'hf/layoutlmv3/token-classification': 'RuntimeError: The size of tensor a (64) must match the size of tensor b (768) at non-singleton dimension 2',
    'hf/lfm2_moe/base': "TypeError: 'NoneType' object is not subscriptable",
    'hf/lfm2_moe/causal-lm': "TypeError: 'NoneType' object is not subscriptable",
    'hf/lfm3_vl_vision/base': "TypeError: Lfm3VlVisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/lightglue/keypoint-matching': 'ValueError: Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)',
    'hf/lilt/base': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (24x60 and 64x16)',
    'hf/lilt/question-answering': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (24x60 and 64x16)',
    'hf/lilt/sequence-classification': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (24x60 and 64x16)',
    'hf/lilt/token-classification': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (24x60 and 64x16)',
    'hf/longcat_flash/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 3',
    'hf/longcat_flash/causal-lm': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 3',
    'hf/lw_detr/object-detection': "config validator 'validate_architecture': ValueError: `image_size` has to be divisible by `num_windows`, where image_size / num_windows % math.sqrt(nu",
    'hf/lw_detr_vit/backbone': "config validator 'validate_architecture': ValueError: `image_size` has to be divisible by `num_windows`, where image_size / num_windows % math.sqrt(nu",
    'hf/lxmert/base': 'ValueError: `visual_feats` cannot be `None`',
    'hf/lxmert/pretraining': 'ValueError: `visual_feats` cannot be `None`',
    'hf/lxmert/question-answering': 'ValueError: `visual_feats` cannot be `None`',
    'hf/marian/causal-lm': "RuntimeError: shape '[-1, 128]' is invalid for input of size 1394424",
    'hf/marian/seq2seq-lm': "RuntimeError: shape '[-1, 58101]' is invalid for input of size 3072",
    'hf/mask2former/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (12) at non-singleton dimension 3',
    'hf/mask2former/universal-segmentation': 'ImportError: Mask2FormerLoss requires the scipy library but it was not found in your environment. You can install it with pip: `pip install scipy`. Pl',
    'hf/maskformer/universal-segmentation': 'ImportError: MaskFormerLoss requires the scipy library but it was not found in your environment. You can install it with pip: `pip install scipy`. Ple',
    'hf/mimi/base': 'ValueError: in_channels must be divisible by groups',
    'hf/mimi_decoder/base': 'ValueError: in_channels must be divisible by groups',
    'hf/mimi_encoder/base': 'ValueError: not enough values to unpack (expected 3, got 2)',
    'hf/minicpm_ocr_vision/base': "AttributeError: 'NoneType' object has no attribute 'device'",
    'hf/minicpmv4_7_vision/base': "AttributeError: 'NoneType' object has no attribute 'device'",
    'hf/mm-grounding-dino/base': 'RuntimeError: selected index k out of range',
    'hf/mm-grounding-dino/zero-shot-object-detection': 'RuntimeError: selected index k out of range',
    'hf/mobilevitv2/image': 'RuntimeError: Given input with spatial size (1, 1), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), calculated shape of the array of sliding bloc',
    'hf/mobilevitv2/image-classification': 'RuntimeError: Given input with spatial size (1, 1), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), calculated shape of the array of sliding bloc',
    'hf/mobilevitv2/semantic-segmentation': 'RuntimeError: Given input with spatial size (1, 1), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), calculated shape of the array of sliding bloc',
    'hf/moonshine_streaming/base': "AttributeError: 'MoonshineStreamingConfig' object has no attribute 'num_key_value_heads'",
    'hf/moonshine_streaming/speech-seq2seq': "AttributeError: 'MoonshineStreamingConfig' object has no attribute 'num_key_value_heads'",
    'hf/muse_glimmer_assistant/base': "TypeError: MuseGlimmerAssistantModel.forward() missing 1 required positional argument: 'context_hidden_states'",
    'hf/muse_glimmer_vision/base': "TypeError: MuseGlimmerVisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/muse_spark/base': 'ValueError: groups must be a positive integer',
    'hf/muse_spark/image-text-to-text': 'ValueError: groups must be a positive integer',
    'hf/muse_spark_audio/base': 'ValueError: groups must be a positive integer',
    'hf/muse_spark_vision/base': "TypeError: MuseSparkVisionModel.forward() missing 1 required positional argument: 'grid_thw'",
    'hf/musicgen/base': "RuntimeError: shape '[-1, 4, 12]' is invalid for input of size 24",
    'hf/musicgen/causal-lm': "RuntimeError: shape '[-1, 4, 12]' is invalid for input of size 24",
    'hf/musicgen/text-to-waveform': "TypeError: ones_like(): argument 'input' (position 1) must be Tensor, not NoneType",
    'hf/musicgen_melody/base': "RuntimeError: shape '[-1, 4, 12]' is invalid for input of size 24",
    'hf/musicgen_melody/causal-lm': "RuntimeError: shape '[-1, 4, 12]' is invalid for input of size 24",
    'hf/musicgen_melody/text-to-waveform': 'ValueError: You have to specify either decoder_input_ids or decoder_inputs_embeds',
    'hf/nemo_speechlm/seq2seq-lm': "config validator 'validate_architecture': ValueError: `head_config.audio_hidden_size` (512) must match `audio_config.hidden_size` (64).",
    'hf/nemotron/base': "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'",
    'hf/nemotron/causal-lm': "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'",
    'hf/nemotron/question-answering': "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'",
    'hf/nemotron/sequence-classification': "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'",
    'hf/nemotron/token-classification': "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'",
    'hf/nemotron3_5_asr/rnnt': "TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not NoneType",
    'hf/nemotron3_5_transcribe_asr_audio/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'hf/nemotron3_5_transcribe_audio/base': "config validator 'validate_architecture': ValueError: `head_config.audio_hidden_size` (512) must match `audio_config.hidden_size` (64).",
    'hf/nemotron3_5_transcribe_word_timestamp/base': 'IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)',
    'hf/nemotron3_diarization/audio-frame-classification': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'hf/nemotron3_diarization/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'hf/nemotron3_diarization_audio/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'hf/nemotron_asr_streaming/rnnt': "TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not NoneType",
    'hf/nemotron_asr_streaming_encoder/base': 'RuntimeError: loss not a finite scalar: shape () value nan',
    'hf/neucodec/base': 'RuntimeError: too large after shrinking (34.6M params)',
    'hf/omdet-turbo/zero-shot-object-detection': 'RuntimeError: too large after shrinking (51.8M params)',
    'hf/omniasr_audio/base': 'RuntimeError: Given groups=1, weight of size [64, 1, 10], expected input[1, 2, 4000] to have 1 channels, but got 2 channels instead',
    'hf/omniasr_ctc/base': 'RuntimeError: Given groups=1, weight of size [64, 1, 10], expected input[1, 2, 4000] to have 1 channels, but got 2 channels instead',
    'hf/omniasr_ctc/ctc': 'RuntimeError: Given groups=1, weight of size [64, 1, 10], expected input[1, 2, 4000] to have 1 channels, but got 2 channels instead',
    'hf/oneformer/base': "TypeError: OneFormerModel.forward() missing 1 required positional argument: 'task_inputs'",
    'hf/oneformer/universal-segmentation': 'ImportError: OneFormerLoss requires the scipy library but it was not found in your environment. You can install it with pip: `pip install scipy`. Plea',
    'hf/owlv2/base': "AttributeError: 'NoneType' object has no attribute 'to'",
    'hf/owlv2/zero-shot-object-detection': 'RuntimeError: einsum(): subscript d has size 32 for operand 1 which does not broadcast with previously seen size 64',
    'hf/owlvit/base': "AttributeError: 'NoneType' object has no attribute 'to'",
    'hf/owlvit/zero-shot-object-detection': 'RuntimeError: einsum(): subscript d has size 32 for operand 1 which does not broadcast with previously seen size 64',
    'hf/parakeet_rnnt/rnnt': "TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not NoneType",
    'hf/parakeet_tdt/tdt': "TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not NoneType",
    'hf/pe_audio/base': 'RuntimeError: too large after shrinking (27.6M params)',
    'hf/pe_audio_encoder/base': 'RuntimeError: too large after shrinking (27.5M params)',
    'hf/pe_audio_video/base': 'RuntimeError: too large after shrinking (344.0M params)',
    'hf/pe_audio_video_encoder/base': 'RuntimeError: too large after shrinking (343.9M params)',
    'hf/pe_video/base': 'RuntimeError: too large after shrinking (316.3M params)',
    'hf/pe_video_encoder/base': 'RuntimeError: too large after shrinking (316.2M params)',
    'hf/perception_lm/base': "TypeError: 'NoneType' object is not subscriptable",
    'hf/perception_lm/image-text-to-text': "TypeError: 'NoneType' object is not subscriptable",
    'hf/pi0/base': "TypeError: PI0Model.forward() missing 1 required positional argument: 'action_embeds'",
    'hf/pi0/image-text-to-text': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x12 and 32x64)',
    'hf/pix2struct/image-text-to-text': 'IndexError: too many indices for tensor of dimension 2',
    'hf/pocket_tts_audio_tokenizer/base': 'ValueError: in_channels must be divisible by groups',
    'hf/pocket_tts_audio_tokenizer_decoder/base': 'ValueError: in_channels must be divisible by groups',
    'hf/pocket_tts_audio_tokenizer_encoder/base': 'ValueError: not enough values to unpack (expected 3, got 2)',
    'hf/pp_doclayout_v2/object-detection': 'IndexError: list index out of range',
    'hf/pp_doclayout_v3/base': 'IndexError: list index out of range',
    'hf/pp_doclayout_v3/object-detection': 'IndexError: list index out of range',
    'hf/pp_doclayout_v4/base': 'IndexError: list index out of range',
    'hf/pp_doclayout_v4/object-detection': 'IndexError: list index out of range',
    'hf/pp_formulanet/image-text-to-text': "AttributeError: 'NoneType' object has no attribute 'clone'",
    'hf/pp_lcnet_v4/backbone': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/pp_ocrv5_mobile_det/object-detection': 'IndexError: list index out of range',
    'hf/pp_ocrv5_mobile_rec/base': 'RuntimeError: Given input size: (384x1x1). Calculated output size: (384x0x0). Output size is too small',
    'hf/pp_ocrv5_mobile_rec/text-recognition': 'RuntimeError: Given input size: (384x1x1). Calculated output size: (384x0x0). Output size is too small',
    'hf/pp_ocrv5_server_det/object-detection': "TypeError: 'NoneType' object is not subscriptable",
    'hf/pp_ocrv5_server_rec/base': 'RuntimeError: Given input size: (256x2x8). Calculated output size: (256x0x4). Output size is too small',
    'hf/pp_ocrv5_server_rec/text-recognition': 'RuntimeError: Given input size: (256x2x8). Calculated output size: (256x0x4). Output size is too small',
    'hf/pp_ocrv6_medium_det/base': "TypeError: 'NoneType' object is not subscriptable",
    'hf/pp_ocrv6_medium_det/object-detection': "TypeError: 'NoneType' object is not subscriptable",
    'hf/pp_ocrv6_small_det/base': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/pp_ocrv6_small_det/object-detection': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/pp_ocrv6_small_rec/base': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/pp_ocrv6_small_rec/text-recognition': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/pp_ocrv6_tiny_rec/base': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/pp_ocrv6_tiny_rec/text-recognition': 'RuntimeError: Given groups=96, weight of size [96, 1, 3, 3], expected input[2, 16, 8, 8] to have 96 channels, but got 16 channels instead',
    'hf/prompt_depth_anything/depth-estimation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/qwen2_5_omni/multimodal-lm': "TypeError: _forward_unimplemented() got an unexpected keyword argument 'input_ids'",
    'hf/qwen2_5_omni_thinker/base': "AttributeError: 'Qwen2_5OmniThinkerConfig' object has no attribute 'vision_start_token_id'",
    'hf/qwen2_5_omni_thinker/image-text-to-text': "AttributeError: 'Qwen2_5OmniThinkerConfig' object has no attribute 'vision_start_token_id'",
    'hf/qwen2_5_vl_vision/base': "TypeError: Qwen2_5_VisionTransformerPretrainedModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/qwen3_5_moe_vision/base': "TypeError: Qwen3_5MoeVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/qwen3_5_vision/base': "TypeError: Qwen3_5VisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/qwen3_asr_encoder/base': "TypeError: Qwen3ASREncoder.forward() missing 1 required positional argument: 'input_features_mask'",
    'hf/qwen3_omni_moe/multimodal-lm': "AttributeError: 'Qwen3OmniMoeTalkerTextConfig' object has no attribute 'shared_expert_intermediate_size'",
    'hf/qwen3_omni_moe_thinker/base': "AttributeError: 'Qwen3OmniMoeThinkerConfig' object has no attribute 'vision_start_token_id'",
    'hf/qwen3_omni_moe_thinker/image-text-to-text': "AttributeError: 'Qwen3OmniMoeThinkerConfig' object has no attribute 'vision_start_token_id'",
    'hf/qwen3_vl_moe_vision/base': "TypeError: Qwen3VLMoeVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/qwen3_vl_vision/base': "TypeError: Qwen3VLVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/qwen4_exp/base': "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType'",
    'hf/qwen4_exp/causal-lm': "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType'",
    'hf/qwen4_exp/image-text-to-text': "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType'",
    'hf/qwen4_exp_text/base': "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType'",
    'hf/qwen4_exp_text/causal-lm': "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType'",
    'hf/qwen4_exp_vision/base': "TypeError: Qwen4ExpVisionModel.forward() missing 2 required positional arguments: 'hidden_states' and 'grid_thw'",
    'hf/reformer/masked-lm': 'AssertionError: If you want to use `ReformerForMaskedLM` make sure `config.is_decoder=False` for bi-directional self-attention.',
    'hf/rf_detr/base': "RuntimeError: shape '[2, 4, 0, 4, 0, -1]' is invalid for input of size 512",
    'hf/rf_detr/instance-segmentation': "RuntimeError: shape '[2, 4, 0, 4, 0, -1]' is invalid for input of size 512",
    'hf/rf_detr/object-detection': "RuntimeError: shape '[2, 4, 0, 4, 0, -1]' is invalid for input of size 512",
    'hf/rf_detr_dinov2/backbone': "RuntimeError: shape '[2, 4, 0, 4, 0, -1]' is invalid for input of size 512",
    'hf/rt_detr/base': 'IndexError: list index out of range',
    'hf/rt_detr/object-detection': 'IndexError: list index out of range',
    'hf/rt_detr_v2/base': 'IndexError: list index out of range',
    'hf/rt_detr_v2/object-detection': 'IndexError: list index out of range',
    'hf/sam/mask-generation': 'RuntimeError: The size of tensor a (256) must match the size of tensor b (64) at non-singleton dimension 1',
    'hf/sam2/mask-generation': 'RuntimeError: Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8, 8, 64]',
    'hf/sam2_hiera_det_model/base': 'RuntimeError: Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8, 8, 64]',
    'hf/sam2_video/base': "TypeError: Sam2VideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'hf/sam2_video/mask-generation': 'RuntimeError: Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8, 8, 64]',
    'hf/sam2_vision_model/base': 'RuntimeError: Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8, 8, 64]',
    'hf/sam3/base': 'ValueError: You must specify exactly one of input_ids or text_embeds',
    'hf/sam3_lite_text/base': 'ValueError: You must specify exactly one of input_ids or text_embeds',
    'hf/sam3_lite_text_text_model/base': "TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not NoneType",
    'hf/sam3_tracker/mask-generation': 'RuntimeError: Given groups=1, weight of size [8, 64, 1, 1], expected input[2, 256, 8, 8] to have 64 channels, but got 256 channels instead',
    'hf/sam3_tracker_video/base': "TypeError: Sam3TrackerVideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'hf/sam3_video/base': "TypeError: Sam3VideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'hf/sam3_video/mask-generation': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (5184) at non-singleton dimension 2',
    'hf/sam_hq/mask-generation': 'RuntimeError: Given transposed=1, weight of size [64, 16, 2, 2], expected input[2, 256, 2, 2] to have 64 channels, but got 256 channels instead',
    'hf/sapiens2/backbone': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/sapiens2/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (0) at non-singleton dimension 1',
    'hf/sapiens2/image-matting': "TypeError: 'NoneType' object is not subscriptable",
    'hf/sapiens2/normal-estimation': "TypeError: 'NoneType' object is not subscriptable",
    'hf/sapiens2/semantic-segmentation': "TypeError: 'NoneType' object is not subscriptable",
    'hf/seggpt/base': "ValueError: Input image size (64*32) doesn't match model (32*32).",
    'hf/shieldgemma2/image-classification': 'ValueError: Expected input batch_size (24) to match target batch_size (2).',
    'hf/siglip/zero-shot-image-classification': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x768 and 64x2)',
    'hf/siglip2/zero-shot-image-classification': 'RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x768 and 64x2)',
    'hf/slanet/table-recognition': 'RuntimeError: Given groups=1, weight of size [96, 64, 1, 1], expected input[2, 512, 1, 1] to have 64 channels, but got 512 channels instead',
    'hf/speech-encoder-decoder/speech-seq2seq': "RuntimeError: Calculated padded input size per channel: (1). Kernel size: (3). Kernel size can't be greater than actual input size",
    'hf/step3p7/base': 'ValueError: Could not find a `sliding_window` argument in the config, or it is not set',
    'hf/step3p7/image-text-to-text': 'ValueError: Could not find a `sliding_window` argument in the config, or it is not set',
    'hf/superglue/keypoint-matching': 'ValueError: Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)',
    'hf/t5gemma2_encoder/base': "AttributeError: 'T5Gemma2TextConfig' object has no attribute 'dropout_rate'",
    'hf/textnet/backbone': 'RuntimeError: Given groups=1, weight of size [16, 16, 3, 3], expected input[2, 64, 16, 16] to have 16 channels, but got 64 channels instead',
    'hf/textnet/base': 'RuntimeError: Given groups=1, weight of size [16, 16, 3, 3], expected input[2, 64, 16, 16] to have 16 channels, but got 64 channels instead',
    'hf/textnet/image-classification': 'RuntimeError: Given groups=1, weight of size [16, 16, 3, 3], expected input[2, 64, 16, 16] to have 16 channels, but got 64 channels instead',
    'hf/time_series_transformer/base': 'ValueError: The `prediction_length` config needs to be specified.',
    'hf/timm_backbone/backbone': 'ValueError: backbone is not set in the config. Please set it to a timm model name.',
    'hf/timm_wrapper/image': 'RuntimeError: too large after shrinking (23.5M params)',
    'hf/timm_wrapper/image-classification': 'RuntimeError: too large after shrinking (23.5M params)',
    'hf/tipsv2_dpt/depth-estimation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/tipsv2_dpt/normal-estimation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/tipsv2_dpt/semantic-segmentation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
    'hf/tvp/base': "AttributeError: 'NoneType' object has no attribute 'dtype'",
    'hf/udop/base': 'ValueError: Bbox is required for horizontal relative position bias',
    'hf/udop/image-text-to-text': 'ValueError: Bbox is required for horizontal relative position bias',
    'hf/univnet/base': 'RuntimeError: Given groups=1, weight of size [64, 16, 5], expected input[2, 32, 16] to have 16 channels, but got 32 channels instead',
    'hf/unlimited_ocr/base': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1',
    'hf/unlimited_ocr/image-text-to-text': 'RuntimeError: The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1',
    'hf/upernet/semantic-segmentation': 'IndexError: list index out of range',
    'hf/uvdoc/base': 'RuntimeError: Given groups=1, weight of size [128, 768, 1, 1], expected input[2, 128, 2, 2] to have 768 channels, but got 128 channels instead',
    'hf/vibevoice/speech-seq2seq': 'RuntimeError: too large after shrinking (65.6M params)',
    'hf/vibevoice_acoustic_tokenizer/base': 'RuntimeError: too large after shrinking (43.6M params)',
    'hf/vibevoice_acoustic_tokenizer_decoder/base': 'RuntimeError: too large after shrinking (21.8M params)',
    'hf/vibevoice_acoustic_tokenizer_encoder/base': 'RuntimeError: too large after shrinking (21.8M params)',
    'hf/vibevoice_asr/base': 'RuntimeError: too large after shrinking (43.7M params)',
    'hf/vibevoice_asr/seq2seq-lm': 'RuntimeError: too large after shrinking (43.7M params)',
    'hf/video_llama_3_vision/base': "TypeError: VideoLlama3VisionModel.forward() missing 2 required positional arguments: 'grid_thw' and 'merge_sizes'",
    'hf/videomt/universal-segmentation': 'ImportError: VideomtLoss requires the scipy library but it was not found in your environment. You can install it with pip: `pip install scipy`. Please',
    'hf/videoprism/zero-shot-image-classification': "TypeError: VideoPrismClipModel.forward() missing 1 required positional argument: 'pixel_values_videos'",
    'hf/videoprism_vision_model/image': 'ValueError: not enough values to unpack (expected 5, got 2)',
    'hf/videoprism_vision_model/video-classification': 'ValueError: not enough values to unpack (expected 5, got 2)',
    'hf/vilt/base': 'ValueError: You have to specify either pixel_values or image_embeds',
    'hf/vilt/visual-question-answering': 'ValueError: You have to specify either pixel_values or image_embeds',
    'hf/vision-encoder-decoder/image-text-to-text': 'ValueError: You must specify exactly one of input_ids or inputs_embeds',
    'hf/vision-text-dual-encoder/base': "AttributeError: 'NoneType' object has no attribute 'dtype'",
    'hf/vits/text-to-waveform': 'RuntimeError: nondeterministic in train mode (0.3066641092300415 vs 0.2741756737232208)',
    'hf/vjepa2/base': 'RuntimeError: permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input',
    'hf/vjepa2/video-classification': 'RuntimeError: permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input',
    'hf/voxtral_realtime/base': 'ValueError: You must specify exactly one of input_features or encoder_inputs_embeds',
    'hf/voxtral_realtime/seq2seq-lm': 'ValueError: You must specify exactly one of input_features or encoder_inputs_embeds',
    'hf/voxtral_realtime_text/base': 'AttributeError: module transformers has no attribute VoxtralRealtimeTextModel',
    'hf/wav2vec2-bert/audio-classification': 'RuntimeError: Given normalized_shape=[160], expected input with shape [*, 160], but got input of size[2, 32, 16]',
    'hf/wav2vec2-bert/audio-frame-classification': 'RuntimeError: Given normalized_shape=[160], expected input with shape [*, 160], but got input of size[2, 32, 16]',
    'hf/wav2vec2-bert/audio-xvector': 'RuntimeError: Given normalized_shape=[160], expected input with shape [*, 160], but got input of size[2, 32, 16]',
    'hf/wav2vec2-bert/base': 'RuntimeError: Given normalized_shape=[160], expected input with shape [*, 160], but got input of size[2, 32, 16]',
    'hf/wav2vec2-bert/ctc': "ValueError: You are trying to instantiate <class 'transformers.models.wav2vec2_bert.modeling_wav2vec2_bert.Wav2Vec2BertForCTC'> with a configuration t",
    'hf/wav2vec2-conformer/ctc': "ValueError: You are trying to instantiate <class 'transformers.models.wav2vec2_conformer.modeling_wav2vec2_conformer.Wav2Vec2ConformerForCTC'> with a ",
    'hf/wavtokenizer/base': "config validator 'validate_architecture': ValueError: WavTokenizer uses no projections around the quantizer, so `codebook_dim` (512) must equal `hidde",
    'hf/wavtokenizer_encoder/base': "config validator 'validate_architecture': ValueError: WavTokenizer uses no projections around the quantizer, so `codebook_dim` (512) must equal `hidde",
    'hf/xclip/base': "AttributeError: 'NoneType' object has no attribute 'shape'",
    'hf/xcodec/base': 'ValueError: Audio must be mono, but got 4000',
    'hf/xcodec2/base': 'RuntimeError: too large after shrinking (34.5M params)',
    'hf/xlstm/base': 'RuntimeError: The size of tensor a (32) must match the size of tensor b (64) at non-singleton dimension 2',
    'hf/xlstm/causal-lm': 'RuntimeError: The size of tensor a (32) must match the size of tensor b (64) at non-singleton dimension 2',
    'hf/xmod/base': 'ValueError: Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`',
    'hf/xmod/causal-lm': 'ValueError: Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`',
    'hf/xmod/masked-lm': 'ValueError: Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`',
    'hf/xmod/sequence-classification': 'ValueError: Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`',
    'hf/xmod/token-classification': 'ValueError: Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`',
    'hf/zamba/base': "ValueError: There is an issue with your definition of `tie_weights_keys` for ^layers.1.shared_transf:^layers.(?!1\\.)\\d+.shared_transf. We found ['laye",
    'hf/zamba/causal-lm': "ValueError: There is an issue with your definition of `tie_weights_keys` for ^layers.1.shared_transf:^layers.(?!1\\.)\\d+.shared_transf. We found ['laye",
    'hf/zamba/sequence-classification': "ValueError: There is an issue with your definition of `tie_weights_keys` for ^layers.1.shared_transf:^layers.(?!1\\.)\\d+.shared_transf. We found ['laye",
    'hf/zoedepth/depth-estimation': 'ValueError: The number of hidden states should be equal to the number of neck hidden sizes.',
}
KINDS: dict[str, str] = dict(p.split("=") for p in _PASSED)
RESULTS: dict[str, str | None] = {**_FAILED, **dict.fromkeys(KINDS)}
