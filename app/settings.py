"""The settings object lives in the engine package (the command line saves tuned values too)."""
from chunkwise.core.settings import SCHEMA_VERSION, Settings, load_settings, save_settings, settings_path

__all__ = ["SCHEMA_VERSION", "Settings", "load_settings", "save_settings", "settings_path"]
