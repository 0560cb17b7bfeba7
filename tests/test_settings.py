import pytest

from stream_lsh.settings import Secret, Settings, SettingsError


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


def test_the_readme_tables_give_every_setting_with_its_default():
    """The README's settings tables are written by hand: each setting must be there, and a row of
    one variable must show the default the code uses (the engine's defaults come from DedupConfig)."""
    import re
    from enum import Enum
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    rows = {
        match[0]: match[1]
        for match in re.findall(r"^\| `(STREAM_LSH_[A-Z_]+)`[^|]*\| `([^`]*)` \|", readme, re.M)
    }
    for name in Settings.names():
        variable = f"STREAM_LSH_{name.upper()}"
        assert variable in readme or f"…_{name.upper()}" in readme, f"{variable} is missing from the README"
        if variable in rows:
            default = Settings.default(name)
            shown = (
                default.reveal()
                if isinstance(default, Secret)
                else ",".join(default)
                if isinstance(default, tuple)
                else str(default.value)
                if isinstance(default, Enum)
                else str(default).lower()
                if isinstance(default, bool)
                else f"{default:g}"
                if isinstance(default, float)
                else str(default)
            )
            assert rows[variable] == shown, (
                f"README says {variable} defaults to {rows[variable]}, the code {shown}"
            )


def test_replace_changes_settings_by_their_flat_names_and_validates():
    settings = Settings.load(environ={})
    changed = settings.replace(seed=7, home_partitions=5, now="2026-11-24T10:00:00Z")
    assert (changed.engine.seed, changed.stream.home_partitions) == (7, 5)
    assert changed.input.now_ms() == 1_795_514_400_000 and settings.engine.seed == 1
    with pytest.raises(SettingsError, match="unknown settings: sed"):
        settings.replace(sed=7)
    with pytest.raises(SettingsError, match="home_partitions must be >= 1"):
        settings.replace(home_partitions=0)
