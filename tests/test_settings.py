import pytest

from stream_lsh.settings import Settings, SettingsError


def test_defaults_build_a_valid_engine_config():
    config = Settings.load(environ={}).dedup_config()
    assert config.threshold == 0.3 and config.num_perm == 128 and config.ttl == 72 * 3600


def test_environment_then_flags():
    env = {
        "STREAM_LSH_THRESHOLD": "0.7",
        "STREAM_LSH_NUM_PERM": "64",
        "STREAM_LSH_BOILERPLATE": "off",
        "STREAM_LSH_LANGUAGES": "en, fr",
        "STREAM_LSH_BANDS": "auto",
    }
    settings = Settings.load(environ=env, num_perm=256, threshold=None)
    assert (settings.engine.threshold, settings.engine.num_perm, settings.engine.boilerplate) == (
        0.7,
        256,
        False,
    )
    assert settings.engine.languages == ("en", "fr") and settings.engine.bands is None


def test_ttl_zero_means_forever():
    assert Settings.load(environ={}, ttl_hours=0).dedup_config().ttl is None


@pytest.mark.parametrize(
    "env, message",
    [
        ({"STREAM_LSH_THRESHOLD": "high"}, "STREAM_LSH_THRESHOLD='high'"),
        ({"STREAM_LSH_BOILERPLATE": "maybe"}, "expected true/false"),
        ({"STREAM_LSH_THRESHOLD": "1.5"}, "threshold must be in"),
        ({"STREAM_LSH_SHINGLES": "sentences"}, "unknown shingle kind"),
        ({"STREAM_LSH_BANDS": "40", "STREAM_LSH_ROWS": "4"}, "exceeds the signature length"),
        ({"STREAM_LSH_LANGUAGES": "en,klingon"}, "unknown stop-word languages"),
        ({"STREAM_LSH_TTL_HOURS": "-1"}, "ttl_hours must be >= 0"),
        ({"STREAM_LSH_STANDBY_REPLICAS": "-1"}, "standby_replicas must be >= 0"),
        ({"STREAM_LSH_STATUS_INTERVAL_S": "0.5"}, "status_interval_s must be 0 .no reports. or at least 1"),
        ({"STREAM_LSH_STATUS_INTERVAL_S": "-5"}, "status_interval_s must be 0"),
        ({"STREAM_LSH_STATUS_INTERVAL_S": "nan"}, "status_interval_s must be 0"),
        ({"STREAM_LSH_ALERT_LEVELS": "3,3"}, r"alert_levels: alert level 2 \(3\) must ask for more"),
        ({"STREAM_LSH_ALERT_LEVELS": "ten"}, "alert_levels: alert level 'ten' is not N or PAGES:SOURCES"),
        ({"STREAM_LSH_ALERT_WITHIN_HOURS": "0"}, "alert_within_hours must be positive hours"),
        ({"STREAM_LSH_ALERT_WITHIN_HOURS": "inf"}, "alert_within_hours must be positive hours"),
    ],
)
def test_bad_settings_are_refused_with_the_reason(env, message):
    with pytest.raises(SettingsError, match=message):
        Settings.load(environ=env)


def test_status_reports_can_be_switched_off_and_default_to_every_5_s():
    assert Settings.load(environ={}).stream.status_interval_s == 5.0
    assert Settings.load(environ={"STREAM_LSH_STATUS_INTERVAL_S": "0"}).stream.status_interval_s == 0


def test_alert_rules_default_to_3_10_30_sources_within_6_hours():
    rules = Settings.load(environ={}).engine.alert_rules()
    assert rules.describe() == "3,10,30 within 6 h"
    changed = Settings.load(environ={"STREAM_LSH_ALERT_LEVELS": "5:3,12:10"}, alert_within_hours=2)
    assert changed.engine.alert_rules().describe() == "5:3,12:10 within 2 h"
    assert Settings.load(environ={}).stream.alerts_topic == "dedup-alerts"


def test_unknown_override_is_refused():
    with pytest.raises(SettingsError, match="unknown settings: colour"):
        Settings.load(environ={}, colour="blue")


def test_every_setting_is_documented():
    rows = Settings.describe()
    assert all(name.startswith("STREAM_LSH_") and help_text for name, _, help_text in rows)


def test_a_misspelled_variable_is_refused_naming_the_closest_valid_one():
    with pytest.raises(SettingsError, match=r"STREAM_LSH_TRESHOLD \(did you mean STREAM_LSH_THRESHOLD\?\)"):
        Settings.load(environ={"STREAM_LSH_TRESHOLD": "0.5"})
    with pytest.raises(SettingsError, match=r"unknown environment variable: STREAM_LSH_COLOUR\. Unset it"):
        Settings.load(environ={"STREAM_LSH_COLOUR": "blue"})
    with pytest.raises(SettingsError, match=r"did you mean STREAM_LSH_TTL_HOURS\?"):
        Settings.load(environ={"STREAM_LSH_TTL": "24"})


def test_variables_of_the_prefix_that_are_not_settings_are_allowed():
    env = {
        "STREAM_LSH_KAFKA_CACHE": "/tmp/k",
        "STREAM_LSH_PROSE_CACHE": "/tmp/p",
        "STREAM_LSH_TEST_BROKERS": "tansu",
        "OTHER_TOOL_X": "1",
    }
    assert Settings.load(environ=env) == Settings.load(environ={})


def test_the_settings_reference_is_made_from_the_declarations():
    """docs/settings.md is generated: regenerate it with `python -m stream_lsh.settings >
    docs/settings.md` after changing a declaration."""
    from pathlib import Path

    from stream_lsh.settings import settings_reference

    written = (Path(__file__).parent.parent / "docs" / "settings.md").read_text(encoding="utf-8")
    assert written == settings_reference(), "docs/settings.md is stale: run python -m stream_lsh.settings"
    for name in Settings.names():
        assert f"`STREAM_LSH_{name.upper()}`" in written


def test_every_engine_knob_is_a_setting_and_the_config_is_made_from_them():
    """Each DedupConfig field is reached by a setting of its name or by a declared conversion, so a
    new knob cannot be left without a variable and a flag; a changed setting reaches the engine."""
    from dataclasses import fields

    from stream_lsh.core.config import DedupConfig

    default = Settings.load(environ={}).dedup_config()
    assert default == DedupConfig()
    for spec in fields(DedupConfig):
        assert spec.name in Settings.names() or spec.name in ("ttl", "max_future"), spec.name
    changed = Settings.load(
        environ={"STREAM_LSH_TTL_HOURS": "0", "STREAM_LSH_SHINGLES": "char"},
        lead_share=0.5,
        max_future_hours=2,
    ).dedup_config()
    assert (changed.ttl, changed.shingles.kind.value, changed.lead_share, changed.max_future) == (
        None,
        "char",
        0.5,
        7200.0,
    )


@pytest.mark.parametrize(
    "command", ["dedup", "eval", "tune", "run", "worker", "topics", "produce", "tail", "status"]
)
def test_each_command_has_the_flags_of_the_settings_declared_for_it_and_no_others(command):
    from click.testing import CliRunner

    from stream_lsh.cli import cli
    from stream_lsh.settings import COMMANDS

    assert command in COMMANDS
    shown = CliRunner().invoke(cli, [command, "--help"], terminal_width=200).output
    for name in Settings.names():
        flag = f"--{name.replace('_', '-')} "
        wanted = name in Settings.for_command(command)
        assert (flag in shown) == wanted, f"{command} --help {'lacks' if wanted else 'has'} {flag}"


def test_flags_that_help_shows_per_command():
    """The broker is required everywhere but run, which starts one; tail and status take no
    worker's settings; the secrets have no flag anywhere."""
    assert "[required]" in Settings.help_on("broker", "worker")
    assert "one started for the run" in Settings.help_on("broker", "run")
    for command in ("tail", "status"):
        flags = Settings.for_command(command)
        assert not {"data_dir", "compression", "max_message_bytes", "send_timeout_s"} & set(flags), command
    assert not {"sasl_password", "ssl_key_password"} & {
        n for c in ("run", "worker") for n in Settings.for_command(c)
    }


def test_replace_changes_settings_by_their_flat_names_and_validates():
    settings = Settings.load(environ={})
    changed = settings.replace(seed=7, site_partitions=5, now="2026-11-24T10:00:00Z")
    assert (changed.engine.seed, changed.stream.site_partitions) == (7, 5)
    assert changed.input.now_ms() == 1_795_514_400_000 and settings.engine.seed == 1
    with pytest.raises(SettingsError, match="unknown settings: sed"):
        settings.replace(sed=7)
    with pytest.raises(SettingsError, match="site_partitions must be >= 1"):
        settings.replace(site_partitions=0)
