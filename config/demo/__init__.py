"""`python manage.py run_demo`: web, worker and beat on one machine, and a live workflow."""
