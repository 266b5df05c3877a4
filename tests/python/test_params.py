"""Parameter declarations and override validation, in-process (no elaboration)."""
import subprocess

import pytest

import kvmsim
from conftest import T1

CONTRACT_KEYS = ["kvm.enable_hv_timer", "kvm.lapic_timer_advance_ns", "kvm.hv_timer_advance",
                 "kvm.exit_fastpath", "cyclictest.loops", "vm.count",
                 "vm.vcpus", "platform.apicv", "sim.max_simulated_s"]


def test_params_frame_lists_every_declaration_with_type_default_unit_range_doc():
    df = kvmsim.params()
    assert list(df.columns[:5]) == ["key", "type", "default", "unit", "range"]
    assert df["key"].is_unique
    for key in CONTRACT_KEYS:
        assert key in set(df["key"]), key
    row = df.set_index("key").loc["kvm.enable_hv_timer"]
    assert row["type"] == "bool" and row["default"] in (True, False)
    assert row["default_text"] in ("true", "false")
    assert (df["doc"].str.len() > 0).all()


def test_params_frame_matches_the_cli_listing(kvmsim_binary):
    listing = subprocess.run([kvmsim_binary, "params"], capture_output=True, text=True,
                             check=True).stdout
    keys = set(kvmsim.params()["key"])
    listed = {line.split()[0] for line in listing.splitlines() if line and "." in line.split()[0]}
    assert keys == listed


@pytest.mark.parametrize("override", ["kvm.enable_hv_timr=true", "cyclictest.loops=-3",
                                      "kvm.enable_hv_timer=maybe"])
def test_validate_raises_scenario_error_with_the_clis_message(override, kvmsim_binary):
    key, value = override.split("=")
    with pytest.raises(kvmsim.ScenarioError) as err:
        kvmsim.validate(set={key: value}, scenario=T1)
    cli = subprocess.run([kvmsim_binary, "run", T1, "-q", "--set", override],
                         capture_output=True, text=True)
    assert cli.returncode == 2
    assert f"kvmsim: error: {err.value}" in cli.stderr


def test_unknown_key_message_suggests_the_declared_key():
    with pytest.raises(kvmsim.ScenarioError, match="did you mean 'kvm.enable_hv_timer'"):
        kvmsim.validate(set={"kvm.enable_hv_timr": True})


def test_resolve_applies_file_then_overrides_and_says_where_each_value_came_from():
    df = kvmsim.resolve(T1, set={"cyclictest.loops": 1234, "kvm.enable_hv_timer": False},
                        origins=True).set_index("key")
    assert df.loc["cyclictest.loops", "value"] == 1234
    assert df.loc["cyclictest.loops", "text"] == "1234"
    assert df.loc["cyclictest.loops", "origin"] == "--set"
    assert df.loc["kvm.enable_hv_timer", "value"] is False
    assert df.loc["kvm.enable_hv_timer", "text"] == "false"
    assert df.loc["vm.vcpus", "origin"].startswith(T1 + ":")
    assert kvmsim.resolve(set={})["cyclictest.loops"] == \
        kvmsim.params().set_index("key").loc["cyclictest.loops", "default"]


def test_python_values_become_set_text():
    r = kvmsim.resolve(T1, set={"kvm.enable_hv_timer": False, "vm.pinning": [3, 2]}, text=True)
    assert r["kvm.enable_hv_timer"] == "false"
    assert r["vm.pinning"] == "[3, 2]"


def test_params_are_python_values_of_their_declared_type():
    """Pins: resolve(), params()' default column and kvmsim.value() give each parameter
    as its declared type (int, float, bool, list of int, text for str and dist), and
    text that is not of the type is an error naming the key."""
    decl = kvmsim.params().set_index("key")
    r = kvmsim.resolve(T1, set={"vm.pinning": [3, 2], "sim.max_simulated_s": 2})
    kinds = {"int": int, "double": float, "bool": bool, "string": str, "dist": str,
             "int-list": list}
    for key, v in r.items():
        assert type(v) is kinds[decl.loc[key, "type"]], (key, v)
        assert type(decl.loc[key, "default"]) is kinds[decl.loc[key, "type"]], key
    assert r["vm.pinning"] == [3, 2] and r["sim.max_simulated_s"] == 2.0
    assert kvmsim.value("host.isolcpus", "[]") == []
    with pytest.raises(ValueError, match="key 'cyclictest.loops'"):
        kvmsim.value("cyclictest.loops", "many")
    with pytest.raises(ValueError, match="key 'kvm.enable_hv_timer'"):
        kvmsim.value("kvm.enable_hv_timer", "yes")


def test_metrics_frame_matches_the_cli_listing_and_finds_a_key(kvmsim_binary):
    df = kvmsim.metrics()
    assert list(df.columns) == ["key", "unit", "emitter", "doc"]
    assert df["key"].is_unique and list(df["key"]) == sorted(df["key"])
    listing = subprocess.run([kvmsim_binary, "metrics"], capture_output=True, text=True,
                             check=True).stdout
    assert set(df["key"]) == {line.split()[0] for line in listing.splitlines()[1:]}
    one = kvmsim.metrics("vcpu.3.steal_s")
    assert list(one["key"]) == ["vcpu.<n>.steal_s"] and one["unit"].iloc[0] == "s"
    assert set(kvmsim.metrics("halt_poll.")["key"]) >= {"halt_poll.successful", "halt_poll.attempted"}


def test_the_cpu_model_derives_the_guests_pv_switches_and_a_true_that_cannot_act_is_an_error():
    """vm.cpu_model sets the guest's CPUID; the guest.pv_* defaults follow it, and the
    resolved origin says which rule chose each (docs/model/cpu-model.md)."""
    t4 = "scenarios/ebizzy_overcommit.yaml"
    host = kvmsim.resolve(t4, set={}, origins=True).set_index("key")
    assert host.loc["guest.pv_spinlock", "value"] is True
    assert host.loc["guest.pv_spinlock", "origin"].endswith("(derived)")
    named = kvmsim.resolve(t4, set={"vm.cpu_model": "qemu64"}, origins=True).set_index("key")
    assert named.loc["guest.cpuid.pv_unhalt", "value"] is False
    assert named.loc["guest.pv_spinlock", "value"] is False
    assert named.loc["guest.vcpu_is_preempted", "value"] is False
    assert "kvm_default_props" in named.loc["guest.cpuid.pv_unhalt", "origin"]
    assert set(kvmsim.params().set_index("key").loc[
        ["guest.pv_spinlock", "guest.cpuid.pv_tlb_flush"], "kind"]) == {"derived"}
    with pytest.raises(kvmsim.ScenarioError, match="true cannot act"):
        kvmsim.resolve(t4, set={"vm.cpu_model": "qemu64", "guest.pv_tlb_flush": True})
    # An override may be what makes a file's value possible (applied before the rules).
    ok = kvmsim.resolve(t4, set={"vm.cpu_model": "qemu64", "guest.cpuid.pv_tlb_flush": True,
                                 "guest.pv_tlb_flush": True})
    assert ok["guest.pv_tlb_flush"] is True
