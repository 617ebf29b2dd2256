"""Machines from Python: presets, parameters, configuration files, and the errors of each."""
import pytest

import virtual_ipu as vipu


def test_presets_are_ipu_sims():
    assert {"mk2", "bow", "m2000", "bow2000", "pod16", "pod64"} <= set(vipu.presets())


def test_a_preset_gives_the_published_figures():
    mk2 = vipu.Machine()
    assert (mk2.preset, mk2["machine.chips"], mk2["chip.tiles"]) == ("mk2", 1, 1472)
    assert mk2["tile.clock-hz"] == 1.325e9
    assert vipu.Machine("bow")["tile.clock-hz"] == 1.85e9
    assert vipu.Machine("pod16")["machine.chips"] == 16


def test_parameters_come_from_keywords_and_dicts_in_order():
    m = vipu.Machine("m2000", **{"ipulink.bytes-per-second": 32e9, "chip.tiles": 64})
    assert m["ipulink.bytes-per-second"] == 32e9 and m["chip.tiles"] == 64
    m = vipu.Machine("bow", config={"chip.tiles": 16}, **{"chip.tiles": 32})
    assert m["chip.tiles"] == 32 and m.preset == "bow"
    m["chip.tiles"] = 8
    assert m["chip.tiles"] == 8


def test_every_parameter_has_its_value_default_unit_and_meaning():
    params = vipu.Machine("pod16", **{"chip.tiles": 64}).parameters()
    tiles = params["chip.tiles"]
    assert (tiles.value, tiles.default, tiles.unit) == (64, 1472, "tiles")
    assert "tiles" in tiles.meaning and tiles.low <= 64 <= tiles.high
    assert all(p.unit and p.meaning for p in params.values())
    # The same names, in the same order, as the configuration file ipu-sim writes.
    dumped = [line.split(" = ")[0] for line in vipu.Machine("pod16").dump().splitlines()
              if " = " in line and not line.startswith("preset")]
    assert dumped == list(params)


def test_dump_is_ipu_sims_config_dump(ipu_sim):
    m = vipu.Machine("bow2000", **{"ipulink.bytes-per-second": 40e9, "chip.tiles": 128})
    status, out, _ = ipu_sim("demo", "--preset", "bow2000", "--ipulink.bytes-per-second", "40e9",
                             "--chip.tiles", "128", "--config-dump")
    assert status == 0 and m.dump() == out


def test_a_dumped_file_reads_back_the_same_machine(tmp_path):
    m = vipu.Machine("pod16", **{"gateway.dimm-bytes-per-second": 10e9, "chip.tiles": 256})
    path = tmp_path / "pod.cfg"
    m.dump(path)
    back = vipu.Machine.from_config(path)
    assert back.preset == "pod16" and back.dump() == m.dump()
    assert vipu.Machine(config=str(path))["chip.tiles"] == 256


def test_a_misspelt_name_is_refused_with_the_nearest():
    with pytest.raises(ValueError, match=r"unknown parameter 'chip.tile' \(did you mean chip.tiles"):
        vipu.Machine(**{"chip.tile": 64})
    with pytest.raises(ValueError, match="unknown parameter 'bogus'"):
        vipu.Machine()["bogus"]


def test_a_bad_value_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match=r"bad value 'many' for chip.tiles \(a whole number"):
        vipu.Machine(**{"chip.tiles": "many"})
    with pytest.raises(ValueError, match="bad value '2.5' for chip.tiles"):
        vipu.Machine(**{"chip.tiles": 2.5})
    with pytest.raises(ValueError, match="bad value .* for chip.tiles: a number, string"):
        vipu.Machine(**{"chip.tiles": [1]})


def test_a_configuration_that_makes_no_machine_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="chips"):
        vipu.Machine(**{"machine.chips": 3})
    with pytest.raises(ValueError, match="unknown preset 'pod8'"):
        vipu.Machine("pod8")


def test_a_bad_configuration_file_names_its_line(tmp_path):
    path = tmp_path / "bad.cfg"
    path.write_text("chip.tiles = 64\nchip.tilez = 3\n")
    with pytest.raises(ValueError, match=r"bad.cfg:2: unknown parameter 'chip.tilez'"):
        vipu.Machine.from_config(path)
    with pytest.raises(ValueError, match="missing.cfg"):
        vipu.Machine.from_config(tmp_path / "missing.cfg")
