"""The image stage: a spec (spec.py) and a stack become a Dockerfile (render.py, values checked by
validate.py), a BuildKit build (build.py) and a lock file (lock.py).
"""
