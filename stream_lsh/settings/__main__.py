"""``python -m stream_lsh.settings`` prints docs/settings.md (a test keeps the file equal to it)."""

from . import settings_reference

print(settings_reference(), end="")
