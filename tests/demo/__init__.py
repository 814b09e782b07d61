"""Tests of app/demo."""
