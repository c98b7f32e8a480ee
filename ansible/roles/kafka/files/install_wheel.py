# Run on a lab machine by the kafka role: python3 -c <this> WHEEL DIST_INFO.
# Unpacks a pure-Python wheel into python3's purelib site dir and compiles it, unless that
# dir already holds DIST_INFO/RECORD (this version, installed). kafka-python's dist-info of
# other versions and its one package, kafka/, are removed first. Says "installed SITE" when
# it changed something, nothing when it did not.
import compileall
import glob
import os
import shutil
import sys
import sysconfig
import zipfile

wheel, dist_info = sys.argv[1:]
site = sysconfig.get_path("purelib")
if not os.path.exists(os.path.join(site, dist_info, "RECORD")):
    others = glob.glob(os.path.join(site, "kafka_python-*.dist-info"))
    for old in [*others, os.path.join(site, "kafka")]:
        shutil.rmtree(old, ignore_errors=True)
    os.umask(0o022)  # files 0644, dirs 0755: every user imports it
    os.makedirs(site, exist_ok=True)
    zipfile.ZipFile(wheel).extractall(site)
    compileall.compile_dir(os.path.join(site, "kafka"), quiet=1)
    print("installed", site)
