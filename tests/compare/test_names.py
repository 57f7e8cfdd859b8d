"""Parameter names across frameworks (``compare/names.py``): MindSpore's against PyTorch's, mindformers' Llama against
Hugging Face's (split and fused weights), shapes checked, unmapped layers listed, mapping files."""

import json

import pytest

from tb_plugin_mindspore.compare.names import MappingError, canonical, load_mapping, map_layers, parse_mapping

# mindformers 2.1's Llama parameter names (as its convert_weight.py writes them) and Hugging Face's LlamaForCausalLM.
MF_LLAMA = ["model.tok_embeddings.embedding_weight",
            "model.layers.0.attention.wq.weight", "model.layers.0.attention.wk.weight",
            "model.layers.0.attention.wv.weight", "model.layers.0.attention.wo.weight",
            "model.layers.0.feed_forward.w1.weight", "model.layers.0.feed_forward.w2.weight",
            "model.layers.0.feed_forward.w3.weight", "model.layers.0.attention_norm.weight",
            "model.layers.0.ffn_norm.weight", "model.norm_out.weight", "lm_head.weight"]
HF_LLAMA = ["model.embed_tokens.weight",
            "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
            "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
            "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.down_proj.weight",
            "model.layers.0.mlp.up_proj.weight", "model.layers.0.input_layernorm.weight",
            "model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"]


def _pairs(mapping):
    return {tuple(p.run): tuple(p.reference) for p in mapping.pairs}


def test_mindspore_names_are_pytorch_names():
    ms = ["net.bn1.gamma", "net.bn1.beta", "net.bn1.moving_mean", "net.bn1.moving_variance", "net.emb.embedding_table",
          "net.fc.weight"]
    pt = ["net.bn1.weight", "net.bn1.bias", "net.bn1.running_mean", "net.bn1.running_var", "net.emb.weight",
          "net.fc.weight"]
    m = map_layers(ms, pt)
    assert _pairs(m) == {(a,): (b,) for a, b in zip(ms, pt)}
    assert [p.rule for p in m.pairs] == ["built-in"] * 5 + ["same name"]
    assert m.unmapped_run == m.unmapped_reference == []
    assert "MindSpore gamma = PyTorch weight (norm scale)" in m.pairs[0].notes


def test_wrapper_prefixes_do_not_matter():
    m = map_layers(["network.fc.weight", "_backbone.bn.gamma"], ["module.fc.weight", "_orig_mod.bn.weight"])
    assert _pairs(m) == {("network.fc.weight",): ("module.fc.weight",), ("_backbone.bn.gamma",): ("_orig_mod.bn.weight",)}


def test_mindformers_llama_against_hugging_face_split_weights():
    m = map_layers(MF_LLAMA, HF_LLAMA)
    assert _pairs(m) == {(a,): (b,) for a, b in zip(MF_LLAMA, HF_LLAMA)}
    assert m.unmapped_run == m.unmapped_reference == []
    # Either side may be the run.
    back = map_layers(HF_LLAMA, MF_LLAMA)
    assert _pairs(back) == {(b,): (a,) for a, b in zip(MF_LLAMA, HF_LLAMA)}


def test_fused_weights_map_to_their_parts_with_shapes_checked():
    run = ["model.layers.0.attention.w_qkv.weight", "model.layers.0.feed_forward.w_gate_hidden.weight",
           "model.layers.0.feed_forward.w2.weight"]
    ref = ["model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
           "model.layers.0.self_attn.v_proj.weight", "model.layers.0.mlp.gate_proj.weight",
           "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"]
    run_shapes = {run[0]: (64 + 16 + 16, 64), run[1]: (2 * 172, 64), run[2]: (64, 172)}
    ref_shapes = {ref[0]: (64, 64), ref[1]: (16, 64), ref[2]: (16, 64), ref[3]: (172, 64), ref[4]: (172, 64),
                  ref[5]: (64, 172)}
    m = map_layers(run, ref, run_shapes=run_shapes, reference_shapes=ref_shapes)
    assert _pairs(m) == {(run[0],): tuple(ref[:3]), (run[1],): (ref[3], ref[4]), (run[2],): (ref[5],)}
    assert m.shape_mismatches == []
    assert "fused" in m.pairs[0].notes[0]
    # The reverse: three Hugging Face layers are one mindformers layer.
    back = map_layers(ref, run, run_shapes=ref_shapes, reference_shapes=run_shapes)
    assert _pairs(back)[tuple(ref[:3])] == (run[0],)
    assert back.unmapped_run == [] and back.unmapped_reference == []


def test_transposed_weight_is_said_and_a_shape_mismatch_is_left_out():
    m = map_layers(["fc.weight", "head.weight"], ["fc.weight", "head.weight"],
                   run_shapes={"fc.weight": (10, 32), "head.weight": (4, 8)},
                   reference_shapes={"fc.weight": (32, 10), "head.weight": (4, 9)})
    assert [p.run for p in m.pairs] == [["fc.weight"]]
    assert m.pairs[0].transposed and "transposed (10x32 here, 32x10 in the reference)" in m.pairs[0].notes[0]
    assert m.shape_mismatches == [{"run": ["head.weight"], "reference": ["head.weight"],
                                   "note": "shapes differ: 4x8 against 4x9"}]


def test_unmapped_layers_are_listed_never_dropped():
    m = map_layers(["a.weight", "extra.weight"], ["a.weight", "other.kernel"])
    assert m.unmapped_run == ["extra.weight"] and m.unmapped_reference == ["other.kernel"]


def test_mapping_file_pairs_rules_and_ignore(tmp_path):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"pairs": {"backbone.blocks.0.qkv": ["h.0.q", "h.0.k", "h.0.v"], "head.kernel": "lm_head.weight"},
                                "rules": [{"run": r"^enc\.layer_(\d+)\.", "reference": r"encoder.layer.\1."}],
                                "ignore": ["^loss_scale$"]}))
    mf = load_mapping(path)
    m = map_layers(["backbone.blocks.0.qkv", "head.kernel", "enc.layer_3.dense.weight", "loss_scale"],
                   ["h.0.q", "h.0.k", "h.0.v", "lm_head.weight", "encoder.layer.3.dense.weight"], mf)
    assert _pairs(m) == {("backbone.blocks.0.qkv",): ("h.0.q", "h.0.k", "h.0.v"), ("head.kernel",): ("lm_head.weight",),
                         ("enc.layer_3.dense.weight",): ("encoder.layer.3.dense.weight",)}
    assert {p.rule for p in m.pairs} == {"mapping file"}
    assert m.ignored == ["loss_scale"] and m.unmapped_run == [] and m.unmapped_reference == []


def test_yaml_mapping_file(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "map.yaml"
    path.write_text("pairs:\n  head.kernel: lm_head.weight\n")
    assert load_mapping(path).pairs == {"head.kernel": ["lm_head.weight"]}


@pytest.mark.parametrize("obj, message", [
    ([], "must be an object with 'pairs', 'rules' and/or 'ignore'"),
    ({"pair": {}}, "unknown field(s) pair"),
    ({"pairs": {"a": 3}}, "pairs['a'] must be a reference layer name or a list of them"),
    ({"rules": [{"run": "("}]}, "rules[0] must be {\"run\": REGEX, \"reference\": REPLACEMENT}"),
    ({"rules": [{"run": "(", "reference": "x"}]}, "rules[0] is not a valid regular expression"),
])
def test_bad_mapping_is_refused_with_a_one_line_reason(obj, message):
    with pytest.raises(MappingError) as e:
        parse_mapping(obj, source="map.json")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_unreadable_mapping_files(tmp_path):
    with pytest.raises(MappingError, match="cannot read the mapping file"):
        load_mapping(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MappingError, match="bad.json is not valid JSON"):
        load_mapping(bad)


def test_canonical_names():
    assert canonical("model.layers.3.attention.w_qkv.weight")[0] == [
        "model.layers.3.self_attn.q_proj.weight", "model.layers.3.self_attn.k_proj.weight",
        "model.layers.3.self_attn.v_proj.weight"]
    assert canonical("module.encoder.ln.gamma")[0] == ["encoder.ln.weight"]
