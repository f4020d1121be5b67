"""Baked results of the timm probes and CPU checks, used by vision_models.py.

How these were produced (timm 1.0.31, 1371 names):
  * ``--meta`` over all names: 1328 work with the default policy; of the 43
    others, 11 (hrnet) only needed the drop_path_rate fallback of timm_build
    and 32 got an override below (crossvit: no img_size; patch-14 models: 56;
    gemma4 *_enc: 96; halo* / bat_*: 128, 224 or the pretrained size;
    efficientformer_l*: 224; timm inception_*: 96).
  * ``--check`` for real on 358 models: one per family (161, the smallest by
    parameters), every model <= 5M params (159), and 85 more spread over the
    large families (vit, eva, efficientnet, convnext, resnet, ...).  All
    passed, so TIMM_FAILURES is empty; the tier-3 run checks the rest.

TIMM_POLICY    input policy overrides from ``vision_models.py --meta`` (meta-device
               forward of all timm models; the default policy is img_size=64 for
               fixed-input-size models, else a plain 64x64 input).
TIMM_HUGE      models over 1e9 parameters: fp32 weights + grads + AdamW state of
               the CPU reference and its device copy exceed host memory, so they
               are listed by unbuildable() instead of models().
TIMM_FAILURES  models that failed the real CPU check (``--check``), with reason.
TIMM_TIER2     models checked for real that are <= 5M params with a <= 1 s
               single-core CPU step at the zoo input size.
"""
TIMM_POLICY = {  # name -> (img_size kwarg or None, input side or 'default'): meta-probe results
    'bat_resnext26ts': (None, 'default'),
    'crossvit_15_240': (None, 64),
    'crossvit_15_dagger_240': (None, 64),
    'crossvit_15_dagger_408': (None, 64),
    'crossvit_18_240': (None, 64),
    'crossvit_18_dagger_240': (None, 64),
    'crossvit_18_dagger_408': (None, 64),
    'crossvit_9_240': (None, 64),
    'crossvit_9_dagger_240': (None, 64),
    'crossvit_base_240': (None, 64),
    'crossvit_small_240': (None, 64),
    'crossvit_tiny_240': (None, 64),
    'deepseek_vit_412m': (56, 56),
    'deepseek_vit_412m_align': (56, 56),
    'deepseek_vit_412m_enc': (56, 56),
    'eca_halonext26ts': (None, 'default'),
    'efficientformer_l1': (224, 224),
    'efficientformer_l3': (224, 224),
    'efficientformer_l7': (224, 224),
    'gemma4_vit_167m_enc': (96, 96),
    'gemma4_vit_570m_enc': (96, 96),
    'halo2botnet50ts_256': (128, 128),
    'halonet26t': (None, 'default'),
    'halonet50ts': (None, 'default'),
    'halonet_h1': (None, 'default'),
    'haloregnetz_b': (224, 224),
    'inception_resnet_v2': (None, 96),
    'inception_v3': (None, 96),
    'inception_v4': (None, 96),
    'lamhalobotnet50ts_256': (128, 128),
    'sehalonet33ts': (None, 'default'),
    'vit_intern300m_patch14_448': (56, 56),
}

TIMM_HUGE = {  # name -> parameter count (meta-device build) for models over 1e9 parameters
    'aimv2_1b_patch14_224': 1234487306,
    'aimv2_1b_patch14_336': 1234487306,
    'aimv2_1b_patch14_448': 1234487306,
    'aimv2_3b_patch14_224': 2719951882,
    'aimv2_3b_patch14_336': 2719951882,
    'aimv2_3b_patch14_448': 2719951882,
    'beit3_giant_patch14_224': 1011482762,
    'beit3_giant_patch14_336': 1011482762,
    'davit_giant': 1403427850,
    'eva02_enormous_patch14_clip_224': 4348308746,
    'eva_giant_patch14_224': 1010822282,
    'eva_giant_patch14_336': 1010822282,
    'eva_giant_patch14_560': 1010822282,
    'eva_giant_patch14_clip_224': 1010822282,
    'naflexvit_giant_patch16_radio_v3': 1159635466,
    'regnety_2560': 1272260588,
    'swinv2_cr_giant_224': 2594705866,
    'swinv2_cr_giant_384': 2594705866,
    'vit_5b_patch16_sapiens2': 5066927306,
    'vit_7b_patch16_dinov3': 6716071946,
    'vit_giant_patch14_224': 1010878602,
    'vit_giant_patch14_clip_224': 1010880010,
    'vit_giant_patch14_dinov2': 1134416394,
    'vit_giant_patch14_reg1_tipsv2': 1134416394,
    'vit_giant_patch14_reg4_dinov2': 1134421002,
    'vit_giant_patch16_gap_224': 1011129226,
    'vit_giant_patch16_lingbot': 1134488586,
    'vit_giant_patch16_radio_v3': 1134494218,
    'vit_giant_patch16_sapiens2': 1455489546,
    'vit_giantopt_patch16_siglip_256': 1162814986,
    'vit_giantopt_patch16_siglip_384': 1162814986,
    'vit_giantopt_patch16_siglip_gap_256': 1134485002,
    'vit_giantopt_patch16_siglip_gap_384': 1134485002,
    'vit_gigantic_patch14_224': 1842392970,
    'vit_gigantic_patch14_clip_224': 1842394634,
    'vit_gigantic_patch14_clip_378': 1842394634,
    'vit_gigantic_patch14_clip_quickgelu_224': 1842394634,
    'vit_pe_core_gigantic_patch14_448': 1878533642,
    'vit_pe_lang_gigantic_patch14_448': 1739389706,
    'vit_pe_spatial_gigantic_patch14_448': 1850354186,
}

TIMM_FAILURES = {
}

TIMM_TIER2 = {
    'convnext_atto', 'convnext_atto_ols', 'convnext_atto_rms', 'convnext_femto', 'convnext_femto_ols',
    'convnext_zepto_rms', 'convnext_zepto_rms_ols', 'convnextv2_atto', 'convnextv2_femto', 'cpubone_nano',
    'cs3darknet_focus_s', 'cs3darknet_s', 'cspnext_s', 'cspnext_tiny', 'dla46_c', 'dla46x_c', 'dla60x_c',
    'edgenext_x_small', 'edgenext_xx_small', 'efficientformerv2_s0', 'efficientnet_b0', 'efficientnet_b0_gn',
    'efficientnet_blur_b0', 'efficientnet_es', 'efficientnet_es_pruned', 'efficientnet_lite0',
    'efficientnet_lite1', 'efficientnet_lite2', 'efficientvit_b0', 'efficientvit_m0', 'efficientvit_m1',
    'efficientvit_m2', 'ese_vovnet19b_slim', 'ese_vovnet19b_slim_dw', 'fasternet_t0', 'fastvit_t8',
    'fbnetc_100', 'ghostnet_050', 'ghostnet_100', 'ghostnetv2_100', 'ghostnetv3_050', 'gmlp_ti16_224',
    'hardcorenas_a', 'hardcorenas_b', 'hardcorenas_c', 'hgnetv2_b0', 'hgnetv2_b1', 'iformer_t',
    'inception_next_atto', 'lcnet_035', 'lcnet_050', 'lcnet_075', 'lcnet_100', 'lcnet_150', 'lcnetv2_small',
    'mixnet_m', 'mixnet_s', 'mnasnet_050', 'mnasnet_075', 'mnasnet_100', 'mnasnet_small',
    'mobilenet_edgetpu_100', 'mobilenet_edgetpu_v2_s', 'mobilenet_edgetpu_v2_xs', 'mobilenetv1_100',
    'mobilenetv1_100h', 'mobilenetv2_035', 'mobilenetv2_050', 'mobilenetv2_075', 'mobilenetv2_100',
    'mobilenetv2_110d', 'mobilenetv2_120d', 'mobilenetv2_140', 'mobilenetv3_large_075', 'mobilenetv3_large_100',
    'mobilenetv3_rw', 'mobilenetv3_small_050', 'mobilenetv3_small_075', 'mobilenetv3_small_100',
    'mobilenetv4_conv_small', 'mobilenetv4_conv_small_035', 'mobilenetv4_conv_small_050', 'mobileone_s0',
    'mobileone_s1', 'mobilevit_s', 'mobilevit_xs', 'mobilevit_xxs', 'mobilevitv2_050', 'mobilevitv2_075',
    'mobilevitv2_100', 'pit_ti_224', 'pit_ti_distilled_224', 'pvt_v2_b0', 'regnetx_002', 'regnetx_004',
    'regnety_002', 'regnety_004', 'repghostnet_050', 'repghostnet_058', 'repghostnet_080', 'repghostnet_100',
    'repghostnet_111', 'repghostnet_130', 'repvit_m0_9', 'repvit_m1', 'resnet10t', 'rexnet_100', 'rexnetr_100',
    'semnasnet_050', 'semnasnet_075', 'semnasnet_100', 'semnasnet_140', 'spnasnet_100', 'starnet_s050',
    'starnet_s1', 'starnet_s100', 'starnet_s150', 'starnet_s2', 'swiftformer_xs', 'test_byobnet',
    'test_coatnet', 'test_convnext', 'test_convnext2', 'test_convnext3', 'test_efficientnet',
    'test_efficientnet_evos', 'test_efficientnet_gn', 'test_efficientnet_ln', 'test_mambaout', 'test_maxvit',
    'test_nfnet', 'test_resnet', 'test_vit', 'test_vit2', 'test_vit3', 'test_vit4', 'test_vit_relpos',
    'tf_efficientnet_b0', 'tf_efficientnet_es', 'tf_efficientnet_lite0', 'tf_efficientnet_lite1',
    'tf_efficientnet_lite2', 'tf_mixnet_m', 'tf_mixnet_s', 'tf_mobilenetv3_large_075',
    'tf_mobilenetv3_large_100', 'tf_mobilenetv3_large_minimal_100', 'tf_mobilenetv3_small_075',
    'tf_mobilenetv3_small_100', 'tf_mobilenetv3_small_minimal_100', 'tinynet_a', 'tinynet_b', 'tinynet_c',
    'tinynet_d', 'tinynet_e', 'xcit_nano_12_p16_224', 'xcit_nano_12_p16_384', 'xcit_nano_12_p8_224',
    'xcit_nano_12_p8_384'
}
