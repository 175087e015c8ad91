"""What if: model profiles, replay jobs and the job runner."""
