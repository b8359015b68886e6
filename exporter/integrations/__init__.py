"""Code that runs inside another program; each module imports that program only inside itself."""
