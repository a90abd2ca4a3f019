"""alterations"""
